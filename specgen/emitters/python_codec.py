"""Emitter: the Python codec package of one protocol version (commands, enums, frame reader)."""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from specgen.emitters import imports, pytext, sharing
from specgen.emitters.plan import (
    OCTET,
    BitsStep,
    BlobStep,
    BoolCheck,
    Build,
    FramePlan,
    MessagePlan,
    ModulePlan,
    PlanError,
    Run,
    Text,
    isort_key,
    snake,
)
from specgen.emitters.plan_packed import PackedPlan
from specgen.emitters.pytext import Code
from specgen.emitters.render import Renderer
from specgen.emitters.sharing import Block, block
from specgen.ir import Constant, Protocol
from specgen.registry import SpecVersion

# 64 MiB: far above RabbitMQ's default frame_max (1 MiB), far below what would hurt a reader.
DEFAULT_MAX_FRAME = 64 * 1024 * 1024

# the framing module's names a frame encoder may read, in the order isort writes them
_FRAMING = (
    "HEADER_SIZE",
    "LENGTH",
    "LENGTH_ESCAPE",
    "LENGTH_OFFSET",
    "TRAILER",
    "TRAILER_SIZE",
    "WIDE_HEADER",
)


def emit_shared(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """Files of `generated/<package>/` every version shares: errors, framing, the frame reader,
    and the value containers and records helpers when some version uses them."""
    common = _common(spec, plan)
    segments = {"segment_facts": "", "assembly": ""}
    if plan.packed is not None:  # a segment layer: its header bits, and segments of frames
        for key, name in (("segment_facts", "framing_facts"), ("assembly", "assembly")):
            segments[key] = _packed_macro(
                renderer, "_segment_macros", name, plan.packed.segments, plan.frame
            )
    files = {
        "errors.py": renderer.render(
            "python/errors.py.j2",
            spec,
            plan.protocol,
            short_texts="_short_text" in _error_imports(plan),
            **common,
        ),
        "framing.py": renderer.render(
            "python/framing.py.j2",
            spec,
            plan.protocol,
            default_max_frame=DEFAULT_MAX_FRAME,
            segment_facts=segments["segment_facts"],
            **common,
        ),
        "frame_reader.py": renderer.render(
            "python/frame_reader.py.j2",
            spec,
            plan.protocol,
            assembly=segments["assembly"],
            **common,
        ),
    }
    return files


def _packed_macro(renderer: Renderer, template: str, name: str, *args: Any) -> str:
    return renderer.trimmed_macro(f"python/{template}.j2", name, *args)


def fused_helpers(
    spec: SpecVersion, latest: ModulePlan, plans: list[ModulePlan], renderer: Renderer
) -> dict[str, str]:
    """A fused package's helper modules: the base of every class, and the records and value
    containers when some version uses them."""
    common = _common(spec, plans[-1])
    base = renderer.render("python/base.py.j2", spec, latest.protocol, **_common(spec, latest))
    files = {"base.py": base}
    if any(s.records is not None for p in plans for s in p.structs):
        files["records.py"] = renderer.render(
            "python/records.py.j2", spec, plans[-1].protocol, **common
        )
    if any(p.named or p.decimals for p in plans):
        files["values.py"] = renderer.render(
            "python/values.py.j2", spec, plans[-1].protocol, packed_body="", **common
        )
    return files


def packed_values(spec: SpecVersion, plans: list[ModulePlan], renderer: Renderer) -> dict[str, str]:
    """A segment layer's `values.py`: values say their own type, so the typed primitives'
    codecs, once for every version."""
    packed = next(p.packed for p in plans if p.packed is not None)
    common = _common(spec, plans[-1])
    body = _packed_macro(renderer, "_typed_value_macros", "values_module", packed, common["title"])
    return {
        "values.py": renderer.render(
            "python/values.py.j2", spec, plans[-1].protocol, packed_body=body, **common
        )
    }


def described_files(
    spec: SpecVersion, plan: ModulePlan, renderer: Renderer, modules: tuple[str, ...]
) -> dict[str, str]:
    """Modules of self-describing values (`plan.described`), each from the family's template,
    which calls its `_described_macros.j2` piece."""
    context = {"described": plan.described, "ir": plan.protocol}
    return {
        f"{name}.py": renderer.render(f"python/{name}.py.j2", spec, plan.protocol, **context)
        for name in modules
    }


def emit_described(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """A described version's codec modules: its types' classes, one module per document of the
    spec (`transport.py`, `messaging.py`...), `commands` (their dispatch, re-exporting them),
    `__init__` and enums."""
    assert plan.described is not None
    files = _described_modules(spec, plan, renderer)
    files["__init__.py"] = _described_init(spec, plan, renderer)
    # constants as Python names (the spec's may hold hyphens), their prose on one line
    names = [
        replace(c, name=name, doc=doc)
        for c, (name, _, doc) in zip(plan.protocol.constants, plan.described.constants, strict=True)
    ]
    files["enums.py"] = _enums(
        spec,
        plan,
        renderer,
        names,
        described=plan.described,
        enum_names=_described_enum_names(plan),
    )
    return files


# what a described version's modules take from the package's other modules
_DESCRIBED_PROVIDERS: dict[str, str] = {
    **imports.provided("..errors", ["DecodeError", "EncodeError"]),
    **imports.provided("..framing", ["HEADER"]),
    **imports.provided(
        "..values",
        [
            "Buffer",
            "Codec",
            "Composite",
            "Described",
            "Frame",
            "ProtocolHeader",
            "Registry",
            "Section",
            "Symbol",
            "ULong",
            "Wire",
            "code_of",
            "composite",
            "multiple",
            "read",
            "read_section",
            "write_descriptor",
        ],
    ),
    "_decode_value": "..values:decode_value",
    "_decode_value_wire": "..values:decode_value_wire",
    "encode": "..values:encode_frame",
    "field": "dataclasses",
}


def _part_of(span: str) -> str:
    """The spec document a class's `Spec:` line names, as a module name: `transport`."""
    stem = span.split(":", 1)[0].rsplit("/", 1)[-1].split(".", 1)[0]
    name = re.sub(r"[^A-Za-z0-9]", "_", stem).lower()
    return name if name.isidentifier() and name not in ("commands", "enums") else "types"


def _described_modules(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """The classes of each document of the spec in a module of their own, each importing what
    its code reads; then `commands`, which imports and re-exports them all."""
    d = plan.described
    assert d is not None
    parts: dict[str, list[Any]] = {}
    for c in d.defined:
        parts.setdefault(_part_of(c.span), []).append(c)
    providers = dict(_DESCRIBED_PROVIDERS) | imports.provided("..values", d.writers)
    sets = [str(name) for name, _ in d.allowed] + [str(name) for name, _, _ in d.multiples]
    context = {"described": d, "ir": plan.protocol}
    drafts: dict[str, tuple[str, list[str]]] = {}
    for part, classes in parts.items():
        where = f"{spec.qualified} {part}.py"
        args = {"described_part": part, "described_classes": classes, "described_imports": ""}
        draft = renderer.draft(
            "python/commands.py.j2", spec, plan.protocol, **context, **args, described_sets=sets
        )
        # the constructor sets and `multiple` writers its classes read: drafted with them all,
        # the classes' text (from the first decorator on) tells which
        text = draft.split("\n@", 1)[-1]
        used = [n for n in sets if re.search(rf"\b{n}\b", text)]
        draft = renderer.draft(
            "python/commands.py.j2", spec, plan.protocol, **context, **args, described_sets=used
        )
        drafts[part] = (draft, used)
        defined = block("module", where, draft).defines
        providers |= imports.provided(f".{part}", [c.cls for c in classes if c.cls in defined])
    files: dict[str, str] = {}
    for part, classes in parts.items():
        where = f"{spec.qualified} {part}.py"
        draft, used = drafts[part]
        found = imports.needed(
            draft, {k: v for k, v in providers.items() if v != f".{part}"}, where
        )
        files[f"{part}.py"] = renderer.render(
            "python/commands.py.j2",
            spec,
            plan.protocol,
            **context,
            described_part=part,
            described_classes=classes,
            described_sets=used,
            described_imports=Code(found.text()),
        )
    where = f"{spec.qualified} commands.py"
    hub = {"described_part": "", "described_classes": [], "described_sets": []}
    draft = renderer.draft(
        "python/commands.py.j2", spec, plan.protocol, **context, **hub, described_imports=""
    )
    # it re-exports every class, and the bases and `encode` its module always gave
    bases = ["Composite"] * bool(d.composites) + ["Section"] * bool(d.sections)
    found = imports.needed(draft, providers, where, [*(c.cls for c in d.classes), *bases, "encode"])
    files["commands.py"] = renderer.render(
        "python/commands.py.j2",
        spec,
        plan.protocol,
        **context,
        **hub,
        described_imports=Code(found.text()),
    )
    return files


def _described_enum_names(plan: ModulePlan) -> list[str]:
    """What a described version's `enums` module exports (its `__all__`)."""
    d = plan.described
    assert d is not None
    names = {e.cls for e in d.enums} | {name for name, _, _ in d.constants} | {"COMMANDS"}
    return sorted(names, key=isort_key)


def _described_init(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> str:
    """The version's `__init__`: the family's, naming its described types, frames and values."""
    d = plan.described
    assert d is not None
    values = [*d.wrappers, "encode_value"]  # wrappers as ruff sorts them: naturally
    commands = {"BODIES", "CLASSES", "DESCRIBED", "FRAME_KEYS", "Frame", "ProtocolHeader"}
    commands |= {"decode", "decode_value", "decode_value_wire", "encode"}
    commands |= {"Message", "decode_message", "encode_message"} if d.sections else set()
    exports = [*values, "DecodeError", "EncodeError", "FrameReader"]
    classes = [c.cls for c in d.classes]
    enums = _described_enum_names(plan)
    _exported_once(spec, __init__=exports, commands=[*classes, *commands], enums=enums)
    return renderer.render(
        "python/package_init.py.j2",
        spec,
        plan.protocol,
        value_names=values,
        also=[],
        exports=sorted(exports),
        **_common(spec, plan),
    )


def described_values(
    spec: SpecVersion, plans: list[ModulePlan], renderer: Renderer
) -> dict[str, str]:
    """`values.py`: the type system, once for every version; so their primitives must agree."""
    prims = [p.described.prims if p.described else None for p in plans]
    if any(p != prims[-1] for p in prims):
        raise PlanError(f"{spec.document}: versions of one package encode primitives differently")
    latest = next((p for p in plans if p.protocol.version == spec.version), plans[-1])
    return described_files(spec, latest, renderer, ("values",))


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
        # of those, the classes whose flag says the message's octets go on after the next one
        "follows_more": [m.cls for m in plan.messages if m.follows is not None and m.follows.more],
    }


@dataclass
class VersionCode:
    """One version's codec module before it is rendered: its views and its top-level blocks
    (rendered without Spec: lines, for comparing with the other versions')."""

    spec: SpecVersion
    plan: ModulePlan
    messages: list[dict[str, Any]]
    structs: list[dict[str, Any]]
    blocks: list[Block]


def prepare(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> VersionCode:
    """A fused version's views and blocks, for `shared_blocks` and `emit`."""
    messages = [_message_view(m, plan) for m in plan.messages]
    structs: list[dict[str, Any]] = [
        {
            "name": s.name,
            "spec_name": s.spec_name,
            "owner_note": f"laid out in {s.name[: -len(s.spec_name)]}",
            "attrs": s.attrs,
            "records": s.records,
            "codec": s.codec,
            "kept": s.kept,
            "doc": s.doc,
        }
        for s in plan.structs
    ]
    blocks = [
        block(
            "struct",
            s["name"],
            _macro(renderer, "struct_class", s),
            _macro(renderer, "struct_class", _wordless_struct(s)),
        )
        for s in structs
    ]
    blocks += [
        block(
            "message",
            m["cls"],
            _macro(renderer, "message", {**m, "spans": []}),
            _macro(renderer, "message", _wordless_message(m)),
        )
        for m in messages
    ]
    blocks += [block("named", n.func, _macro(renderer, "named", n)) for n in plan.named]
    return VersionCode(spec, plan, messages, structs, blocks)


def _wordless_message(m: dict[str, Any]) -> dict[str, Any]:
    """A message's view without the spec's words: its layout, as versions are compared by."""
    follows = m["follows"] and replace(m["follows"], doc="")
    attrs = [replace(a, doc="") for a in m["attrs"]]
    return {**m, "paragraphs": [], "spans": [], "attrs": attrs, "follows": follows}


def _wordless_struct(s: dict[str, Any]) -> dict[str, Any]:
    """A structure's view without the spec's words."""
    return {**s, "doc": "", "attrs": [replace(a, doc="") for a in s["attrs"]]}


def _macro(renderer: Renderer, name: str, view: object) -> str:
    """One block of a codec module, from its macro in `_codec_macros.j2`."""
    return renderer.macro("python/_codec_macros.j2", name, view)


def shared_blocks(versions: list[VersionCode], renderer: Renderer) -> set[tuple[str, str]]:
    """The blocks every version of one package renders alike and frames alike, to generate once
    in the package's shared module; none unless some message is among them."""
    found = sharing.shared([v.blocks for v in versions])
    if not any(kind == "message" for kind, _ in found):
        return set()
    latest = next((v for v in versions if v.spec.latest), versions[-1])
    views = [m for m in latest.messages if ("message", m["cls"]) in found]
    checksums = latest.plan.checksums  # the shared blocks' codecs take the flag as theirs do
    templates = [renderer.env.get_template(f"python/{t}.j2") for t in ("_frame_encode", "_framer")]
    framings = set()
    for v in versions:
        context = _encode_context(v.plan.frame, views, checksums)
        framings.add((v.plan.frame.fmt, *(t.render(**context) for t in templates)))
    # a shared class's encode() frames with the shared module's header: only when identical
    return found if len(framings) == 1 else set()


def _encode_context(
    frame: FramePlan, messages: list[dict[str, Any]], checksums: bool
) -> dict[str, Any]:
    """What the frame encoder (`_frame_encode.j2`) needs beyond the frame."""
    aliased = [m["cls"] for m in messages if m["decode_keys"]]
    header_args = []
    for h in frame.header:
        if h.role == "length":
            header_args.append(h.local)
        elif h.role == "dispatch":
            aliased_here = h is frame.dispatch[0] and bool(aliased)
            header_args.append(h.local if aliased_here else f"msg.{h.name.upper()}")
        elif h.role == "version":
            header_args.append("msg.VERSION")
        else:
            header_args.append(f"msg.{h.name}")
    return {
        "frame": frame,
        "framer": _framer(frame),
        "aliased": aliased,
        "header_args": ", ".join(header_args),
        "uses_checksums": checksums,
    }


def _imports(plan: ModulePlan, used: set[str]) -> dict[str, Any]:
    """The helper modules' names a codec module's blocks read (`used`)."""
    value_imports = sorted(
        {"Table" for n in plan.named if n.kind == "map"}
        | {"Values" for n in plan.named if n.kind == "array"}
        | ({"_decimal_parts"} if plan.decimals else set()),
        key=isort_key,
    )
    return {
        "used": used,
        "error_imports": [
            n for n in _error_imports(plan) if n in ("DecodeError", "EncodeError") or n in used
        ],
        "record_imports": [n for n in ("compress", "decompress", "join", "split") if n in used],
        "value_imports": [n for n in value_imports if n in used],
    }


def shared_placement(versions: list[VersionCode], found: set[tuple[str, str]]) -> dict[str, str]:
    """Which package module each shared name lives in. A spec that groups its messages in
    classes (AMQP's `Queue.Declare`) gets a module per class (`queue`), and the structures and
    named types they read one of their own (`named`); a frame-level message (`Heartbeat`)
    and any spec without classes keep to `shared`, which frames them all."""
    latest = next((v for v in versions if v.spec.latest), versions[-1])
    command = {m["cls"]: m["command"] for m in latest.messages}
    groups: dict[tuple[str, str], str] = {}
    for b in latest.blocks:
        if b.ident not in found:
            continue
        if b.kind == "message" and "." in command[b.key]:
            groups[b.ident] = _spec_class(command[b.key].lower())
        else:
            groups[b.ident] = "shared"
    if set(groups.values()) != {"shared"}:
        for ident, group in groups.items():
            if group == "shared" and ident[0] != "message":
                groups[ident] = "named"  # what class modules read: below them, not the hub
    return {name: groups[b.ident] for b in latest.blocks if b.ident in found for name in b.defines}


def emit_shared_codecs(
    versions: list[VersionCode],
    found: set[tuple[str, str]],
    placement: dict[str, str],
    renderer: Renderer,
) -> dict[str, str]:
    """The package's shared modules: the blocks in `found`, each message with the Spec: line of
    every version, in the module `shared_placement` gives it, and `shared.py`, with an encoder
    framing them all as every version does."""
    if not found:
        return {}
    latest = next((v for v in versions if v.spec.latest), versions[-1])
    spans: dict[str, list[str]] = {}
    for v in versions:
        for m in v.messages:
            spans.setdefault(m["cls"], []).append(f"{m['span']} ({v.spec.version})")
    blocks = [b for b in latest.blocks if b.ident in found]
    views = [m for m in latest.messages if ("message", m["cls"]) in found]
    texts: dict[str, list[str]] = {}
    for b in blocks:
        if b.kind == "message":
            view = next(m for m in views if m["cls"] == b.key)
            text = _macro(renderer, "message", {**view, "spans": spans[b.key]})
        else:
            text = b.text
        texts.setdefault(placement[next(iter(b.defines))], []).append(text)
    framing = _encode_context(latest.plan.frame, views, latest.plan.checksums)
    encoder = renderer.env.get_template("python/_frame_encode.j2").render(**framing)
    frame = latest.plan.frame
    dispatch = _dispatch(views)
    framing |= {
        "dispatch": [(_key_repr(k, frame), v) for k, v in sorted(dispatch.items())],
        "fast": _fast_dispatch(frame, dispatch),
        "key_names": ", ".join(h.name for h in frame.key_fields)
        + (", then the body key" if frame.body_keys else ""),
    }
    hub = [b for b in blocks if placement[next(iter(b.defines))] == "shared"]
    used = sharing.used_names([*hub, block("encoder", "encode", encoder)])
    exports = sorted(b.key for b in blocks if b.kind == "struct") + [m["cls"] for m in views]
    files: dict[str, str] = {}
    versions_named = [v.spec.version for v in versions]
    imports_text = ""
    if set(texts) != {"shared"}:
        providers = _package_providers(latest.plan) | {
            n: f".{g}" for n, g in placement.items() if g != "shared"
        }
        for group, group_texts in texts.items():
            if group != "shared":
                files[f"{group}.py"] = _shared_class_module(
                    latest, group, group_texts, providers, versions_named, renderer
                )
        # the hub's imports: what its own code reads, once rendered without them
        draft = _render_shared(
            latest,
            texts,
            views,
            blocks,
            exports,
            used,
            framing,
            "#",
            versions_named,
            renderer,
            True,
        )
        imports_text = imports.needed(draft, providers, f"{latest.spec.package}/shared.py").text()
    files["shared.py"] = _render_shared(
        latest, texts, views, blocks, exports, used, framing, imports_text, versions_named, renderer
    )
    return files


def _render_shared(
    latest: VersionCode,
    texts: dict[str, list[str]],
    views: list[dict[str, Any]],
    blocks: list[Block],
    exports: list[str],
    used: set[str],
    framing: dict[str, Any],
    imports_text: str,
    versions: list[str],
    renderer: Renderer,
    draft: bool = False,
) -> str:
    """`shared.py`: its own blocks, the union and tables of every shared message, the encoder;
    its imports are `imports_text`'s when its spec classes have modules of their own. A `draft`
    is the text unformatted, to read its names from (formatting it would cost a black run)."""
    return (renderer.draft if draft else renderer.render)(
        "python/shared.py.j2",
        latest.spec,
        latest.plan.protocol,
        blocks=texts.get("shared", []),
        messages=views,
        has_structs=any(b.kind == "struct" for b in blocks),
        versions=versions,
        exports=exports,
        framing_imports=[n for n in _FRAMING if n in used],
        imports_text=Code(imports_text),
        **_imports(latest.plan, used),
        **framing,
        **{k: v for k, v in _common(latest.spec, latest.plan).items() if k != "frame"},
    )


def _shared_class_module(
    latest: VersionCode,
    group: str,
    texts: list[str],
    providers: dict[str, str],
    versions: list[str],
    renderer: Renderer,
) -> str:
    """One spec class's shared messages (or, `named`, the structures and named types they
    read), imported from where they are defined, framed by `shared`."""
    imports_text, own = _class_module_imports(texts, providers, f"{latest.spec.package}/{group}.py")
    summary = (
        "the structures and named types read by the messages"
        if group == "named"
        else f"the {group} class's messages"
    )
    return renderer.render(
        "python/shared_class.py.j2",
        latest.spec,
        latest.plan.protocol,
        summary=summary,
        versions=versions,
        framed_by=".shared",
        imports_text=Code(imports_text),
        uses_header="HEADER" in own,
        uses_octet=OCTET in own,
        blocks=texts,
        frame=latest.plan.frame,
        **{k: v for k, v in _common(latest.spec, latest.plan).items() if k != "frame"},
    )


def _class_module_imports(
    texts: list[str], providers: dict[str, str], where: str
) -> tuple[str, set[str]]:
    """A class module's import lines (`shared_class.py.j2`), from what its blocks read, and
    which of the structs every module packs its own of (`OWN_STRUCTS`) they read: those are
    scanned with the blocks so that they count as bound here, not imported."""
    body = "\n\n\n".join(texts)
    own = OWN_STRUCTS & block("module", where, body).uses
    defined = "".join(f'{name} = struct.Struct(">")\n' for name in sorted(own))
    return imports.needed(defined + body, providers, where).text(), own


# the structs a module that packs with them defines itself rather than imports: CPython 3.11
# compiles a method call on an imported name as an attribute load and a call (it takes the name
# for a module), so `_OCTET.pack(n)` with `_OCTET` imported made a bound method on every call
# (Basic.Publish encode 232 -> 289 ns)
OWN_STRUCTS = {"HEADER", OCTET}


def _package_providers(plan: ModulePlan) -> dict[str, str]:
    """The package modules a fused package's shared code reads names from."""
    return {
        **imports.provided(".base", ["Buffer", "Structure"]),
        "structure": "..lazy_init",
        **imports.provided(
            ".errors", [*_error_imports(plan), "_bad_count", "_bad_length", "_short_text"]
        ),
        **imports.provided(".framing", _FRAMING),
        **imports.provided(".records", ["compress", "decompress", "join", "split"]),
        **imports.provided(".values", ["Table", "Values", "_decimal_parts"]),
    }


# the modules of a version whose spec has no classes (`ModulePlan.module_of`), in the order
# its `commands` names them, with what each holds
_GROUPS = {
    "client": "the messages the client sends",
    "server": "the messages the server sends",
    "either": "the messages either peer sends",
    "structures": "the structures and named types the messages read",
}


def _version_class_module(
    code: VersionCode,
    module: str,
    texts: list[str],
    providers: dict[str, str],
    renderer: Renderer,
) -> str:
    """One module of a version's own messages (or structures), grouped as `module_of` says,
    imported from where they are defined, framed by the version's `commands`."""
    spec, plan = code.spec, code.plan
    imports_text, own = _class_module_imports(texts, providers, f"{spec.package_path}/{module}.py")
    return renderer.render(
        "python/shared_class.py.j2",
        spec,
        plan.protocol,
        summary=_GROUPS[module],
        versions=[spec.version],
        framed_by=".commands",
        messages=module != "structures",
        imports_text=Code(imports_text),
        uses_header="HEADER" in own,
        uses_octet=OCTET in own,
        blocks=texts,
        **_common(spec, plan),
    )


def emit(
    code: VersionCode,
    renderer: Renderer,
    found: set[tuple[str, str]] | None = None,
    placement: dict[str, str] | None = None,
) -> dict[str, str]:
    """A fused version's files of `generated/<package>/<module>/`, by name; the blocks in
    `found` are imported from the package's shared modules (`placement` says which) instead
    of rendered here. The others go in `commands.py`, or, where the spec has no classes, in
    the module of their sender and `structures.py` (`ModulePlan.module_of`), `commands.py`
    then dispatching to them and re-exporting their classes."""
    spec, plan = code.spec, code.plan
    found = found or set()
    placement = placement or {}
    protocol = plan.protocol
    frame = plan.frame
    common = _common(spec, plan)
    messages = code.messages
    structs = code.structs
    dispatch = _dispatch(messages)
    # the shared messages' rows of the dispatch tables come from the shared module's, merged in
    # first, where no identity here has both a shared layout and one of this version's own
    shared_funcs = {m["func"] for m in messages if ("message", m["cls"]) in found}
    merged = bool(shared_funcs) and all(
        len({e["func"] in shared_funcs for e in entries}) == 1 for entries in dispatch.values()
    )
    local = [b for b in code.blocks if b.ident not in found]
    # each block's text, by the module of this version it is written into (`commands` unless
    # the spec has no classes: then a module per sender, and one for the structures)
    senders = {m["cls"]: m["sender"] for m in messages}
    modules: dict[str, list[str]] = {}
    for b in local:
        if b.kind == "message":
            view = next(m for m in messages if m["cls"] == b.key)
            text = _macro(renderer, "message", {**view, "spans": [view["span"]]})
        else:
            text = b.text
        module = plan.module_of(senders[b.key] if b.kind == "message" else None)
        modules.setdefault(module, []).append(text)
    texts = modules.pop("commands", [])
    # from the shared module: its classes and codecs this module dispatches to or names
    bound = {name for b in code.blocks if b.ident in found for name in b.defines}
    wanted = sharing.used_names(local)
    # with the shared module's tables merged in, its classes are re-exported through `from
    # ..shared import *` (its __all__: what every version has alike), not named again here
    reexported: set[str] = set()
    if merged:
        reexported = {b.key for b in code.blocks if b.ident in found and b.kind == "struct"}
        reexported |= {m["cls"] for m in messages if ("message", m["cls"]) in found}
    for m in messages:
        if ("message", m["cls"]) in found:
            if merged:
                continue  # its codecs are reached through the shared module's tables
            wanted.add(m["cls"])
            wanted |= {f"_decode_{m['func']}", f"_encode_{m['func']}"}
            if m["fixed_frame"] or m["whole_frame"]:
                wanted.add(f"_frame_{m['func']}")
            wanted |= {f"_decode_{m['func']}_as_{k:04x}" for k in m["decode_keys"]}
    wanted |= {s["name"] for s in structs} - reexported
    shared_imports: dict[str, list[str]] = {}
    for name in sorted(bound & wanted, key=isort_key):
        shared_imports.setdefault(f"..{placement.get(name, 'shared')}", []).append(name)
    if merged:
        shared_imports[".."] = ["shared"]
    key_fields = frame.key_fields
    n_dispatch = len(frame.dispatch)
    frame_keys = sorted({m.ident[:n_dispatch] + m.dispatch[len(m.ident) :] for m in plan.messages})
    # inside the template's f-string: the names as text, the locals as its expressions
    no_layout = Code(
        " ".join(
            f"{pytext.in_fstring(h.name)} {{{h.local}:{h.hex_format}}}"
            if h.role == "dispatch"
            else f"{pytext.in_fstring(h.name)} {{{h.local}}}"
            for h in key_fields
        )
    )
    context = {
        **common,
        **_imports(plan, sharing.used_names(local)),
        **_encode_context(frame, messages, plan.checksums),
    }
    # a spec without classes: the modules of its messages by sender, and the imports of each
    # and of `commands` (which dispatches to them and re-exports their classes) from what each
    # reads
    groups = [{"module": g, "what": _GROUPS[g]} for g in _GROUPS if g in modules]
    files: dict[str, str] = {}
    imports_text = ""
    if modules:
        providers = {n: "." + m for n, m in _package_providers(plan).items()}
        providers |= {name: f"..{placement.get(name, 'shared')}" for name in bound}
        providers["shared"] = ".."  # the shared module's tables, which this version's start with
        for module, module_texts in modules.items():
            for text in module_texts:
                providers |= imports.provided(f".{module}", block("module", module, text).defines)
        for module, module_texts in modules.items():
            files[f"{module}.py"] = _version_class_module(
                code, module, module_texts, providers, renderer
            )
    # what `commands` exports (its __all__; the shared classes come with the shared module's)
    follows = ["following", "continued"] if common["follows"] else []
    follows += ["FRAGMENT_HEAD"] if common["follows"] and common["follows_layout"] else []
    classes = [s["name"] for s in structs] + [m["cls"] for m in messages]
    command_exports = ["FRAME_KEYS", "HEADER_SIZE", "Message", "Sender", "decode", "encode"]
    command_exports += follows + [c for c in classes if c not in reexported]
    render = {
        "blocks": texts,
        "groups": groups,
        "structs": structs,
        "messages": messages,
        "shared_imports": shared_imports,
        "dispatch": [(_key_repr(k, frame), v) for k, v in sorted(dispatch.items())],
        "frame_keys": [_key_repr(k, frame) for k in frame_keys],
        "has_kinds": any(m.kind != "oneway" for m in plan.messages),
        "dispatch_words": _dispatch_words(frame),
        "header_locals": ", ".join(h.local for h in frame.header),
        "key_locals": ", ".join(h.local for h in key_fields),
        "key_names": ", ".join(h.name for h in key_fields)
        + (", then the body key" if frame.body_keys else ""),
        "header_key_names": ", ".join(h.name for h in key_fields),
        "no_layout": no_layout,
        "fast": _fast_dispatch(frame, dispatch),
        "merged": _merged(messages, shared_funcs) if merged else None,
        "reexported": reexported,
        "command_exports": command_exports,
        "packed_body": "",
        **context,
    }
    if modules:
        # the hub's imports: what its own code reads (and re-exports), once rendered without them
        draft = renderer.draft(
            "python/commands.py.j2", spec, protocol, imports_text=Code("#"), **render
        )
        classes = [s["name"] for s in structs] + [m["cls"] for m in messages]
        where = f"{spec.package_path}/commands.py"
        imports_text = imports.needed(draft, providers, where, classes).text()
    files["commands.py"] = renderer.render(
        "python/commands.py.j2", spec, protocol, imports_text=Code(imports_text), **render
    )
    enum_names = sorted(
        {_key_export(protocol)}
        | {e.name for e in protocol.enums}
        | {c.name for c in protocol.constants},
        key=isort_key,
    )
    files["enums.py"] = _enums(spec, plan, renderer, protocol.constants, enum_names=enum_names)
    # the package's own names; its commands' and enums' follow from their modules' __all__
    exports = ["DecodeError", "EncodeError", "FrameReader", "PROTOCOL", "VERSION"]
    exports += ["Fragment"] if common["follows"] else []
    commands = command_exports + sorted(reexported)  # what `import *` of it binds
    _exported_once(spec, __init__=exports, commands=commands, enums=enum_names)
    files["__init__.py"] = renderer.render(
        "python/package_init.py.j2",
        spec,
        protocol,
        exports=sorted(exports),
        also=[],
        **common,
    )
    return files


# what a segment layer's version package re-exports from the package's shared modules
_PACKED_SHARED = {
    "frame_reader": ["Frame", "ProtocolHeader", "decode_frame", "encode_frame", "frames_of"],
    "framing": [
        "FIRST_FRAME",
        "FIRST_SEGMENT",
        "HEADER_SIZE",
        "LAST_FRAME",
        "LAST_SEGMENT",
        "MAX_FRAME_SIZE",
        "PROTOCOL_HEADER",
    ],
    "values": [
        "TYPE_CODES",
        "TYPES",
        "Array",
        "Typed",
        "TypeInfo",
        "decode_value",
        "encode_value",
    ],
}
_PACKED_COMMANDS = (
    "COMMANDS",
    "CONTROLS",
    "FRAME_KEYS",
    "STRUCTS",
    "Assembler",
    "Assemblies",
    "Command",
    "Control",
    "Segment",
    "decode",
    "decode_command",
    "decode_control",
    "decode_header",
    "decode_segment",
    "encode",
    "encode_header",
    "encode_method",
)
# the values module's helpers every commands module of a segment layer calls
_PACKED_HELPERS = {
    "Reader",
    "Writer",
    "_bad",
    "_bad_flags",
    "_not_bool",
    "_r_size",
    "_r_sized",
    "_r_struct32",
    "_short",
    "_sized",
    "_w_sized",
    "_w_struct32",
    "register_coded",
}


def emit_packed(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> dict[str, str]:
    """A segment layer's version package: its commands (packing-flag structs), enums and
    `__init__`, from `plan_packed`'s plan."""
    packed = plan.packed
    assert packed is not None
    protocol = plan.protocol
    common = _common(spec, plan)
    fields = [f for s in packed.structs + packed.methods for f in s.fields]
    annotations = " ".join(p.annotation for p in packed.used_prims)
    value_names = _PACKED_HELPERS | {n for p in packed.used_prims for n in (p.reader, p.writer)}
    value_names |= {n for n in ("Array", "Typed") if n in annotations}
    enums = {f.enum for f in fields if f.enum}
    enums |= {packed.segments.type_enum, packed.segments.track_enum}
    files, commands = _packed_modules(
        spec,
        protocol,
        packed,
        renderer,
        sorted(enums, key=isort_key),
        sorted(value_names, key=isort_key),
    )
    enum_names = sorted(
        {"CLASS_CODES", "CONSTANTS", "DOMAINS"}
        | {e.name for e in protocol.enums}
        | {c.name for c in packed.constants},
        key=isort_key,
    )
    files["enums.py"] = renderer.render(
        "python/enums.py.j2",
        spec,
        protocol,
        commands=[],
        single_key=False,
        enums=protocol.enums,
        constants=packed.constants,
        domain_tables=_packed_macro(renderer, "_packed_macros", "domain_tables", packed),
        enum_names=enum_names,
        **common,
    )
    also = [(m, sorted(names, key=isort_key)) for m, names in sorted(_PACKED_SHARED.items())]
    shared = [n for _, names in also for n in names]
    # the package's own names; its commands' and enums' follow from their modules' __all__
    exports = sorted({"DecodeError", "EncodeError", "FrameReader", "PROTOCOL", "VERSION", *shared})
    _exported_once(spec, __init__=exports, commands=commands, enums=enum_names)
    files["__init__.py"] = renderer.render(
        "python/package_init.py.j2",
        spec,
        protocol,
        exports=exports,
        also=also,
        **common,
    )
    return files


# the frame layer's names the commands module reads, and the module giving each; the frame
# reader's classes it subclasses under a private name, its own being called so
_FRAME_LAYER = {
    **imports.provided("..errors", ["DecodeError"]),
    **imports.provided("..framing", ["HEADER", "HEADER_SIZE", "MAX_FRAME_SIZE", "PROTOCOL_HEADER"]),
    **imports.provided(
        "..frame_reader", ["Frame", "ProtocolHeader", "decode_frame", "encode_frame"]
    ),
    **{f"_{n}": f"..frame_reader:{n}" for n in ("Assembler", "Assemblies", "Segment")},
    "get_args": "typing",  # CONTROLS and COMMANDS, from the Control and Command unions
}


def _packed_modules(
    spec: SpecVersion,
    protocol: Protocol,
    packed: PackedPlan,
    renderer: Renderer,
    enums: list[str],
    value_names: list[str],
) -> tuple[dict[str, str], list[str]]:
    """A segment layer's codec modules: one per spec class (its structs, controls and commands,
    as the spec groups them), and `commands.py`, which dispatches to them all and re-exports
    their classes. Each module imports what its code reads. With them, what `commands.py`
    exports (its `__all__`)."""
    groups: dict[str, tuple[list[Any], list[Any]]] = {}
    for s in packed.structs:
        groups.setdefault(_spec_class(s.name), ([], []))[0].append(s)
    for m in packed.methods:
        groups.setdefault(_spec_class(m.name), ([], []))[1].append(m)
    session = _spec_class(packed.structs[0].name) if packed.structs else ""  # its header first
    bodies = {
        g: _packed_macro(renderer, "_packed_macros", "group_body", packed, ss, ms, g == session)
        for g, (ss, ms) in groups.items()
    }
    providers = {
        **imports.provided("..values", [*value_names, "_Command", "_Control", "_Struct"]),
        **imports.provided(".enums", enums),
        **_FRAME_LAYER,
    }
    providers |= {f"_{g}": f".:{g}" for g in bodies}  # the commands module's tables read them
    classes: list[str] = []
    for g, text in bodies.items():
        defined = block("module", g, text).defines
        providers |= imports.provided(f".{g}", defined)
        classes += sorted((n for n in defined if n[:1].isupper()), key=isort_key)
    title = spec.title or spec.protocol
    files: dict[str, str] = {}
    for g, text in bodies.items():
        names = sorted({s.name.split(".", 1)[1] for s in groups[g][0] + groups[g][1]})
        doc = _packed_macro(
            renderer, "_packed_macros", "group_doc", packed, title, spec.version, g, names
        )
        files[f"{g}.py"] = _packed_module(
            spec, protocol, packed, renderer, doc, text, providers, f"{g}.py", enums, []
        )
    doc = _packed_macro(renderer, "_packed_macros", "commands_doc", packed, title, spec.version)
    body = _packed_macro(renderer, "_packed_macros", "commands_body", packed)
    exported = [*classes, *(n for n in _PACKED_COMMANDS if n not in classes)]
    body += "\n\n__all__ = [\n" + "".join(f"    {n!r},\n" for n in exported) + "]\n"
    files["commands.py"] = _packed_module(
        spec, protocol, packed, renderer, doc, body, providers, "commands.py", enums, classes
    )
    return files, exported


def _spec_class(name: str) -> str:
    """The spec class a qualified XML name (`message.transfer`) belongs to: its module's name."""
    return name.split(".", 1)[0].replace("-", "_")


def _packed_module(
    spec: SpecVersion,
    protocol: Protocol,
    packed: PackedPlan,
    renderer: Renderer,
    doc: str,
    body: str,
    providers: dict[str, str],
    where: str,
    enums: list[str],
    exported: list[str],
) -> str:
    """One module: its docstring, the imports its body reads (and the names it re-exports), the
    constants it reads, then the body."""
    prims = {
        f"_{p.py.upper()}": f">{p.param}"
        for p in packed.used_prims
        if p.impl in ("int", "float") and p.param != "B"
    } | {
        f"_{p.py.upper()}_PAIR": f">{p.param}{p.param}"
        for p in packed.used_prims
        if p.impl == "ranges"
    }
    reads = block("module", where, body).uses
    used_prims = [(n, f) for n, f in prims.items() if n in reads]
    used_maps = [e for e in enums if f"_{e}" in reads]
    local = _packed_macro(
        renderer, "_packed_macros", "module_locals", used_prims, used_maps, "_Class" in reads
    )
    found = imports.needed(local + body, providers, f"{spec.qualified} {where}", exported)
    lines = found.text()
    for m in ("decimal", "uuid"):  # named by annotations: get_type_hints() resolves them here
        lines = lines.replace(f"import {m}\n", f"import {m}  # for annotations (get_type_hints)\n")
    return renderer.render(
        "python/commands.py.j2",
        spec,
        protocol,
        # each part was rendered from the plan (spec text through its filters), or is names
        packed_body=Code(f"{doc}\nfrom __future__ import annotations\n\n{lines}\n{local}{body}"),
    )


def _exported_once(spec: SpecVersion, **modules: Sequence[str]) -> None:
    """A version's `__init__` re-exports its `commands` and `enums` modules through `import *`
    (each one's `__all__`), beside its own names; a name two of them export would be shadowed
    there without a word, so generation stops instead."""
    seen: dict[str, str] = {}
    for module, names in modules.items():
        for name in names:
            if name in seen:
                raise PlanError(
                    f"{spec.document}: {name!r} is exported by both {seen[name]} and {module}"
                    " of its version package: rename one in an overlay"
                )
            seen[name] = module


def _enums(
    spec: SpecVersion,
    plan: ModulePlan,
    renderer: Renderer,
    constants: Sequence[Constant],
    **context: Any,
) -> str:
    """`enums.py`: the commands' keys or identities, the enumerations and the constants."""
    protocol = plan.protocol
    return renderer.render(
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
        # a document of types alone has no commands: its COMMANDS is empty, never a `Key`
        single_key=bool(protocol.commands) and all(len(c.ident) == 1 for c in protocol.commands),
        enums=protocol.enums,
        constants=constants,
        **_common(spec, plan),
        **{"domain_tables": "", **context},
    )


def _error_imports(plan: ModulePlan) -> list[str]:
    """The errors module's names the version's codec uses: its cold-path helpers only where a
    step calls them."""
    kinds: set[str] = set()

    def visit(steps: list[object]) -> None:
        for step in steps:
            kinds.add(type(step).__name__)
            if isinstance(step, Text) and step.short:
                kinds.add("short Text")
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
    if "short Text" in kinds:
        names.append("_short_text")
    if "Run" in kinds:
        names.append("_truncated")
    return names


def _key_export(protocol: Protocol) -> str:
    """`Key` (an IntEnum) where every command is one key, else `COMMANDS` (name -> identity)."""
    return "Key" if all(len(c.ident) == 1 for c in protocol.commands) else "COMMANDS"


def _header_values(m: MessagePlan, frame: FramePlan, length: Code) -> list[Code]:
    """The expressions a message's frame header packs, field by field: `length` for the length,
    the message's identity and version as constants, any other header field off the message."""
    head = []
    for h in frame.header:
        if h.role == "length":
            head.append(length)
        elif h.role == "dispatch":
            head.append(Code(format(m.ident[frame.dispatch.index(h)], h.hex_format)))
        elif h.role == "version":
            head.append(pytext.number(m.version))
        else:
            head.append(Code("msg." + pytext.identifier(h.name, "header field")))
    return head


def _framed(m: MessagePlan, frame: FramePlan, aliased: bool) -> dict[str, Any] | None:
    """The constants a message's frame encoder, made by the module's `_framer` (`_framer.j2`),
    packs in the header before its body's parts: its identity and version. None where `encode`
    must look at the message (a key on the wire) or the length may need the wide header."""
    if aliased or frame.escape is not None:
        return None
    head = _header_values(m, frame, Code(""))
    args = [v for h, v in zip(frame.header, head, strict=True) if h.role in ("dispatch", "version")]
    return {"args": args}


def _length_of_body(frame: FramePlan) -> str:
    """The frame header's length field for a frame whose body is `body`."""
    extra = frame.size + frame.trailer_size - frame.adjust
    sign = "+" if extra > 0 else "-"
    return "len(body)" + (f" {sign} {pytext.number(abs(extra))}" if extra else "")


def _framer(frame: FramePlan) -> dict[str, Any] | None:
    """The module's one frame-encoder factory (`_framer.j2`) of its messages that are not one
    fixed pack: the header packed before the body's parts, the length worked out from the parts,
    the identity and version its parameters, any other header field off the message. None where
    the length may need the wide header (`encode` frames every message itself)."""
    if frame.escape is not None:
        return None
    length = _length_of_body(frame)
    head: list[str] = []
    params: list[str] = []
    for h in frame.header:
        if h.role == "length":
            head.append(length)
        elif h.role in ("dispatch", "version"):
            head.append(h.local)
            params.append(h.local)
        else:
            head.append("msg." + pytext.identifier(h.name, "header field"))
    return {"head": head, "params": params, "trailer": bool(frame.trailer)}


def _fixed_frame(m: MessagePlan, frame: FramePlan, aliased: bool) -> dict[str, Any] | None:
    """A message whose every field has a fixed width is its whole frame in one struct: the
    header (its length a constant), the body key, the fields and the trailer, packed at once.
    None for any other (a text, an array, an optional field, a checksum, a key on the wire)."""
    if aliased or not all(isinstance(s, Run | BitsStep | BoolCheck | Build) for s in m.steps):
        return None
    runs = [s for s in m.steps if isinstance(s, Run)]
    if any(r.prepare or r.mark for r in runs):
        return None
    body = len(m.body_key) + sum(r.size for r in runs)
    length = frame.size + body + frame.trailer_size - frame.adjust
    if frame.escape is not None and length >= frame.escape:
        return None
    head = _header_values(m, frame, pytext.number(length))
    if m.body_key:
        head.append(Code('b"' + pytext.byte_escapes(m.body_key) + '"'))
    fmt = frame.fmt + (f"{len(m.body_key)}s" if m.body_key else "")
    fmt += "".join(r.fmt[1:] for r in runs) + frame.trailer_fmt[1:]
    tail = [Code(format(v, f"#0{2 + 2 * w}x")) for _, _, w, v in frame.trailer]
    return {"fmt": fmt, "head": head, "runs": runs, "tail": tail}


def _whole_frame(m: MessagePlan, frame: FramePlan, aliased: bool) -> dict[str, Any] | None:
    """A message whose one field is its whole body (bytes to the frame's end, no body key: 0-9-1's
    content body) frames that field as it is: the header packed before it, the trailer after,
    in one join, with no parts list and no body encoder call. None for any other, and where
    the length may need the wide header."""
    fields = _fields(m)
    if aliased or m.body_key or frame.escape is not None or len(fields) != 1:
        return None
    blob = fields[0]
    if not _ends_on_rest(m):
        return None
    assert isinstance(blob, BlobStep)
    return {
        "expr": Code(blob.expr),
        "head": _header_values(m, frame, Code(_length_of_body(frame))),
        "trailer": bool(frame.trailer),
    }


def _fast_dispatch(
    frame: FramePlan, dispatch: dict[tuple[int, ...], list[dict[str, Any]]]
) -> dict[str, Any]:
    """`decode`'s straight road: each identity that has one layout, looked up by one number
    straight to its decoder (the header's key fields folded into one integer; a body key read
    as one integer by a struct of its width). Identities with several layouts, and anything not
    found, take the general road after it, which names what is wrong."""

    def func(m: dict[str, Any]) -> str:
        return f"_decode_{m['func']}" + (f"_as_{m['alias']}" if m["alias"] else "")

    single = {k: func(v[0]) for k, v in dispatch.items() if len(v) == 1}
    widths = [h.width for h in frame.key_fields]
    if not frame.body_keys:
        terms = []
        for i, h in enumerate(frame.key_fields):
            shift = 8 * sum(widths[i + 1 :])
            terms.append(f"{h.local} << {shift}" if shift else h.local)
        ones = []
        for k, f in sorted(single.items()):
            n = 0
            for v, w in zip(k, widths, strict=True):
                n = n << (8 * w) | v
            ones.append((f"{n:#0{2 + 2 * sum(widths)}x}", f))
        return {"expr": " | ".join(terms), "one": ones, "keyed": [], "unkeyed": []}
    if frame.version is not None or len(frame.dispatch) != 1:
        return {"expr": "", "one": [], "keyed": [], "unkeyed": []}
    if any(len(b.when) != 1 for b in frame.body_keys):
        return {"expr": "", "one": [], "keyed": [], "unkeyed": []}
    codes = {1: "B", 2: "H", 4: "I", 8: "Q"}
    keyed = []
    for b in frame.body_keys:
        if b.size not in codes:
            return {"expr": "", "one": [], "keyed": [], "unkeyed": []}
        rows = []
        for k, f in sorted(single.items()):
            if k[0] == b.when[0] and len(k) > 1:
                number = int.from_bytes(struct.pack(b.fmt, *k[1:]), "big")
                rows.append((f"{number:#0{2 + 2 * b.size}x}", f))
        keyed.append((b.when[0], f">{codes[b.size]}", ", ".join(b.labels), rows))
    when = {b.when[0] for b in frame.body_keys}
    unkeyed = [(str(k[0]), f) for k, f in sorted(single.items()) if k[0] not in when]
    return {"expr": frame.dispatch[0].local, "one": [], "keyed": keyed, "unkeyed": unkeyed}


def _dispatch(messages: list[dict[str, Any]]) -> dict[tuple[int, ...], list[dict[str, Any]]]:
    """Each identity's layouts (messages), requests first: what `_DECODERS` lists."""
    dispatch: dict[tuple[int, ...], list[dict[str, Any]]] = {}
    for m in messages:
        dispatch.setdefault(m["dispatch"], []).append(m)
        for alias in m["decode_keys"]:
            # decoded under another key: a wrapper remembers it, so encode writes it back
            key = (alias, *m["dispatch"][1:])
            dispatch.setdefault(key, []).append({**m, "alias": f"{alias:04x}"})
    for entries in dispatch.values():
        entries.sort(key=lambda m: {"request": 0, "oneway": 0, "response": 1}[m["kind"]])
    return dispatch


def _merged(messages: list[dict[str, Any]], shared_funcs: set[str]) -> dict[str, Any]:
    """What a version's tables take from the shared module's (merged in first) and leave out of
    their own rows: the shared messages' classes and decoders."""
    decoders = {f"_decode_{f}" for f in shared_funcs}
    for m in messages:
        if m["func"] in shared_funcs:
            decoders |= {f"_decode_{m['func']}_as_{k:04x}" for k in m["decode_keys"]}
    return {
        "funcs": shared_funcs,
        "decoders": decoders,
        "classes": {m["cls"] for m in messages if m["func"] in shared_funcs},
    }


def _key_repr(key: tuple[int, ...], frame: FramePlan) -> str:
    """A dispatch tuple as the generated code writes it: header dispatch values in hex, body
    keys and the version in decimal."""
    out = []
    for i, v in enumerate(key):
        h = frame.dispatch[i] if i < len(frame.dispatch) else None
        out.append(format(v, h.hex_format) if h is not None else str(v))
    return "(" + ", ".join(out) + ("," if len(out) == 1 else "") + ")"


def _ident_names(m: MessagePlan, plan: ModulePlan) -> list[str]:
    """The name of each part of a message's identity: header fields, then body keys."""
    ir_frame = plan.protocol.frame
    body = ir_frame.body_key(m.message.ident)
    names = [*ir_frame.dispatch, *(f.name for f in (body.fields if body else ()))]
    return names[: len(m.message.ident)]


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
    paragraphs: list[str] = []
    texts = [m.message.doc, command.doc if m.kind != "response" else ""]
    for para in (p for text in texts if text for p in text.split("\n\n")):
        # a message's prose often is its command's: each paragraph once
        if para.strip() and _clean(para) not in paragraphs:
            paragraphs.append(_clean(para))
    if not paragraphs:
        # no prose of the spec's: the class constants' facts in words, as its first line
        paragraphs.append(
            f"{m.message.name}: {m.command} {kind_words}, {noun} {ident}{versioned}, "
            f"sent by {'both peers' if m.sender == 'both' else 'the ' + m.sender}."
        )
    decode_keys = [i[0] for i in m.message.decode_idents]
    if decode_keys:
        also = ", ".join(f"{k:#06x}" for k in decode_keys)
        paragraphs.append(
            f"Also decoded under key {also}, as a real peer sends it (see the overlay)."
        )
    names = _ident_names(m, plan)
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
        "body_key": m.body_key,
        "carried": [h.local for h in frame.carried],
        "fixed_frame": _fixed_frame(m, frame, bool(decode_keys)),
        "whole_frame": _whole_frame(m, frame, bool(decode_keys)),
        "ends_on_rest": _ends_on_rest(m),
        "framed": _framed(m, frame, bool(decode_keys)),
        "alias": "",
        # a version number only where the frame header carries one (Streams' key/version pairs)
        "version": m.version if frame.version else None,
        "checksums": plan.checksums,  # whether its codecs take verify/seal_checksums
        "kind": m.kind,
        "sender": m.sender,
        "attrs": m.attrs,
        "steps": m.steps,
        "runs": m.runs,
        "kept": m.kept,
        "paragraphs": paragraphs,
        # what each part of IDENT is, where it has several
        "ident_names": ", ".join(names) if len(m.ident) > 1 else "",
        "span": m.message.span,
    }


def _fields(m: MessagePlan) -> list[object]:
    """The message's decode steps but the one that builds it."""
    return [s for s in m.steps if not (isinstance(s, Build) and s.local == "msg")]


def _ends_on_rest(m: MessagePlan) -> bool:
    """Whether the message's last field takes the rest of the body (bytes with no length): its
    decoder ends with that field, with nothing after it left to refuse."""
    fields = _fields(m)
    last = fields[-1] if fields else None
    return isinstance(last, BlobStep) and not last.len_local and last.limit == "end"


def _reply_class(plan: ModulePlan, name: str) -> str:
    """The class of the message named `name` (its first version's)."""
    for m in plan.messages:
        if m.message.name == name:
            return m.cls
    return name


def _clean(text: str) -> str:
    """Spec prose for a docstring: links reduced to their text (the template escapes it, `doc`)."""
    return re.sub(r"https?://\S+\[([^\]]*)\]", r"\1", text)
