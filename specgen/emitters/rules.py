"""Emitter: a version's `rules.py`, the rules its spec states that a program can check, as data
over the generated classes, which `specgen_codecs.violations` (one for every protocol) checks.

The rules come from the IR (`Protocol.rules`, each with the span the spec states it at). Each is
placed on the class and attribute the codec generates for its owner and field, found in the
version's plan, whatever its layout: a rule whose owner or field the plan has no class or
attribute for stops generation (`PlanError`, the rule's span), never dropped quietly.

Checked per value (`violations(msg)`): notnull, null, length, regexp, the comparisons with a
number, range, choice, response-code, mandatory and required; per sender (`violations(msg,
sender)`): sender; per connection (`Conversation`): a comparison with a field of another
message (AMQP 0-9-1's channel-max against Tune's). Not checked per value, and counted so:
`multiple` and `default` (what a field may hold and means when absent: the codec's types and
decoding already say so), `requires` (the codec reads only the types a field's constructors
allow), `key-version` (a frame of another key or version does not decode at all) and prose.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass

from specgen.emitters.naming import PlanError, attr_name
from specgen.emitters.plan import ModulePlan
from specgen.emitters.pytext import Code
from specgen.emitters.render import Renderer
from specgen.ir import Protocol
from specgen.ir.rules import COMPARISONS, SpecRule
from specgen.registry import SpecVersion

VALUE_KINDS = frozenset(
    {
        "notnull",
        "null",
        "length",
        "regexp",
        "range",
        "choice",
        "response-code",
        "mandatory",
        "required",
        *COMPARISONS,
    }
)
"""Kinds a message's own values are checked against."""

NOT_CHECKED = {
    "multiple": "what a field may hold: the codec's types say it",
    "default": "what an absent field means: decoding leaves it absent",
    "requires": (
        "checked where the archetype's types are composites (the value's class must provide it)"
        " or restricted to choices (the value must be one); not where they restrict a primitive"
        " without choices (a message-id's, an address's): the codec reads its constructor"
    ),
    "key-version": "a frame of another key or version does not decode at all",
}
"""Checkable kinds that become no check here, and why."""


@dataclass(frozen=True)
class PlacedRule:
    """A rule on a generated class: `attr` its attribute path ("" for the message itself),
    `operand` what it compares with (a number, pattern, sender, (low, high) or the values
    allowed), `other` the (class, attribute) of another message it compares with instead."""

    cls: str
    kind: str
    attr: str
    operand: object
    spec: str  # file:line:col
    other: tuple[str, str] | None = None
    unbounded: int | None = None
    source: int = 0  # its rule's index in Protocol.rules (one rule may sit on several classes)


def _norm(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _classes(plan: ModulePlan) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Per owner name (normalised): each class generated for it, with its attributes by every
    name the spec or the IR gives a field (normalised)."""
    out: dict[str, list[tuple[str, dict[str, str]]]] = {}

    def add(names: list[str], cls: str, attrs: dict[str, str]) -> None:
        for name in {_norm(n) for n in names if n}:
            out.setdefault(name, []).append((cls, attrs))

    match plan.layout:
        case "fused":
            for m in plan.messages:
                add([m.message.name, m.cls], m.cls, {_norm(a.name): a.name for a in m.attrs})
            for s in plan.structs:
                add([s.spec_name, s.name], s.name, {_norm(a.name): a.name for a in s.attrs})
        case "described":
            assert plan.described is not None
            for c in plan.described.classes:
                fields = {_norm(f.name): str(f.attr) for f in c.fields}
                fields |= {_norm(str(f.attr)): str(f.attr) for f in c.fields}
                add([c.name, str(c.cls)], str(c.cls), fields)
        case "packed":
            assert plan.packed is not None
            for p in [*plan.packed.methods, *plan.packed.structs]:
                fields = {_norm(f.name): str(f.attr) for f in p.fields}
                fields |= {_norm(str(f.attr)): str(f.attr) for f in p.fields}
                add([p.name, str(p.cls)], str(p.cls), fields)
    return out


def _attr(field: str, attrs: dict[str, str]) -> str | None:
    """The attribute path of the rule's field on a class with `attrs`: the path's first part an
    attribute (the rest the nested structure's, snake case), else its last part (a member of a
    bit container, which the codec flattens into the message)."""
    parts = field.split(".")
    first = attrs.get(_norm(parts[0]))
    if first is not None:
        return ".".join([first, *(attr_name(p) for p in parts[1:])])
    return attrs.get(_norm(parts[-1]))


def place(protocol: Protocol, plan: ModulePlan) -> list[PlacedRule]:
    """Every checkable rule of a kind checked here, on its class(es)."""
    classes = _classes(plan)
    placed: list[PlacedRule] = []
    for index, r in enumerate(protocol.rules):
        if not r.checkable or r.kind == "prose":
            continue
        if r.kind in NOT_CHECKED and (r.kind != "requires" or _requires(r, protocol) is None):
            continue
        _, _, owner = r.owner.partition(":")
        targets = classes.get(_norm(owner), [])
        if not targets:
            raise PlanError(
                f"{r.span}: a {r.kind} rule on {r.address}, which the codec has no class for "
                "-> correct or waive it with an overlay rule entry"
            )
        for cls, attrs in targets:
            attr = "" if r.field is None else _attr(r.field, attrs)
            if attr is None:
                raise PlanError(
                    f"{r.span}: a {r.kind} rule on {r.address}, which {cls} has no attribute for"
                    " -> correct or waive it with an overlay rule entry"
                )
            placed.append(
                dataclasses.replace(_placed(r, cls, attr, classes, protocol), source=index)
            )
    return placed


def _requires(r: SpecRule, protocol: Protocol) -> tuple[str, frozenset[str]] | None:
    """How a `requires` rule is checked: ("provides", the archetypes) where every type providing
    one is a composite, ("one of", their choices) where every one is restricted to choices;
    None where some restrict a primitive without choices (the codec's constructor says it)."""
    archetypes = {str(a) for a in r.values}
    providers = [t for t in protocol.typedefs if archetypes & set(t.provides)]
    if providers and all(t.klass == "composite" for t in providers):
        return ("provides", frozenset(archetypes))
    if providers and all(t.klass == "restricted" and t.choices for t in providers):
        return ("one of", frozenset(str(c.value) for t in providers for c in t.choices))
    return None


def _placed(
    r: SpecRule,
    cls: str,
    attr: str,
    classes: dict[str, list[tuple[str, dict[str, str]]]],
    protocol: Protocol,
) -> PlacedRule:
    spec = str(r.span) if r.span is not None else f"overlay {r.overlay}"
    if r.kind in COMPARISONS and r.other:
        other_owner, _, other_field = r.other.partition(":")[2].partition(".")
        for other_cls, attrs in classes.get(_norm(other_owner), []):
            other_attr = _attr(other_field, attrs)
            if other_attr:
                return PlacedRule(
                    cls, r.kind, attr, None, spec, (other_cls, other_attr), r.unbounded
                )
        raise PlanError(
            f"{r.span}: a {r.kind} rule on {r.address} compares with {r.other}, which the codec "
            "has no class or attribute for -> correct or waive it with an overlay rule entry"
        )
    operand: object
    match r.kind:
        case "range":
            operand = (r.low, r.high)
        case "choice" | "response-code":
            operand = frozenset(_plain(v) for v in r.values)
        case "requires":
            operand = _requires(r, protocol)
        case _:
            operand = _plain(r.value)
    return PlacedRule(cls, r.kind, attr, operand, spec)


def _plain(value: object) -> object:
    """A spec's operand as the plain value a literal is written of (its text is the spec's)."""
    return str(value) if isinstance(value, str) else value


ANY = "*"
"""A field that may hold any described value: followed whatever classes have rules."""


def _references(plan: ModulePlan) -> dict[str, dict[str, set[str]]]:
    """Per class, per attribute: the classes a value of it may be (or hold in a list); ANY
    for a field of any described type."""
    refs: dict[str, dict[str, set[str]]] = {}
    match plan.layout:
        case "fused":
            known = {m.cls for m in plan.messages} | {s.name for s in plan.structs}
            for cls, attrs in [
                *((m.cls, m.attrs) for m in plan.messages),
                *((s.name, s.attrs) for s in plan.structs),
            ]:
                for a in attrs:
                    named = set(re.findall(r"[A-Za-z_]\w*", a.annotation)) & known
                    if named:
                        refs.setdefault(cls, {})[a.name] = named
            heads = {m.follows.layout for m in plan.messages if m.follows and m.follows.layout}
            if heads:  # octets after a frame: their row (the frame reader's) holds the head
                refs["Fragment"] = {"head": heads}
        case "described":
            assert plan.described is not None
            refs["Frame"] = {"body": {ANY}}  # decode's result: the performative is its body
            for c in plan.described.classes:
                for f in c.fields:
                    if f.composite or f.type == "*":
                        refs.setdefault(str(c.cls), {})[str(f.attr)] = {
                            str(f.composite) if f.composite else ANY
                        }
        case "packed":
            assert plan.packed is not None
            for p in [*plan.packed.methods, *plan.packed.structs]:
                for pf in p.fields:
                    if pf.cls:
                        refs.setdefault(str(p.cls), {})[str(pf.attr)] = {str(pf.cls)}
    return refs


def nested(plan: ModulePlan, placed: list[PlacedRule]) -> dict[str, tuple[str, ...]]:
    """Per class, the attributes whose values may hold a structure with rules (at any depth):
    the only ones `violations` looks into, so a message with none costs it one lookup."""
    refs = _references(plan)
    reach = {p.cls for p in placed}
    changed = True
    while changed:  # the classes that have rules or reach one that has
        changed = False
        for cls, attrs in refs.items():
            if cls not in reach and any(
                t in reach or (t == ANY and reach) for ts in attrs.values() for t in ts
            ):
                reach.add(cls)
                changed = True
    out: dict[str, tuple[str, ...]] = {}
    for cls, attrs in sorted(refs.items()):
        follow = tuple(
            a for a, ts in attrs.items() if any(t in reach or (t == ANY and reach) for t in ts)
        )
        if follow:
            out[cls] = follow
    return out


def counts(protocol: Protocol, placed: list[PlacedRule]) -> list[tuple[str, int, int, int]]:
    """Per kind: (kind, checked here, checkable but not checked here, prose only)."""
    checked = Counter(kind for kind, _ in {(p.kind, p.source) for p in placed})
    rows: list[tuple[str, int, int, int]] = []
    for kind in sorted({r.kind for r in protocol.rules}):
        of_kind = [r for r in protocol.rules if r.kind == kind]
        prose = sum(1 for r in of_kind if not r.checkable)
        rows.append((kind, checked[kind], len(of_kind) - prose - checked[kind], prose))
    return rows


def emit(
    spec: SpecVersion, protocol: Protocol, plan: ModulePlan, renderer: Renderer
) -> dict[str, str]:
    """The version's `rules.py`."""
    placed = place(protocol, plan)
    tallies = counts(protocol, placed)
    by_class: dict[str, list[PlacedRule]] = {}
    for p in placed:
        by_class.setdefault(p.cls, []).append(p)
    files = spec_files(placed)
    text = renderer.render(
        "python/rules.py.j2",
        spec,
        protocol,
        title=spec.title,
        version=spec.version,
        source=protocol.source,
        by_class=sorted(by_class.items()),
        files=files,
        at={p.spec: spec_expr(p.spec, files) for p in placed},
        nested=nested(plan, placed),
        counts=tallies,
        # why a kind is not (or not wholly) checked, for the kinds this spec has unchecked
        not_checked={
            k: why for k, why in NOT_CHECKED.items() if any(k == t[0] and t[2] for t in tallies)
        },
    )
    return {"rules.py": text}


def spec_files(placed: list[PlacedRule]) -> dict[str, str]:
    """Each spec file the rules are stated in -> the rules module's constant naming it: `SPEC`
    where there is one, `SPEC_<STEM>` for each of several (AMQP 1.0's parts), so that a rule
    reads `f"{SPEC}:408:5"` on one line instead of the path again in every rule."""
    found = list(dict.fromkeys(p.spec.rsplit(":", 2)[0] for p in placed))
    if len(found) == 1:
        return {found[0]: "SPEC"}
    names: dict[str, str] = {}
    for file in found:
        stem = file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        name = "SPEC_" + re.sub(r"\W+", "_", stem).strip("_").upper()
        while name in names.values():
            name += "_"
        names[file] = name
    return names


def spec_expr(spec: str, files: dict[str, str]) -> Code:
    """`file:line:col` as the f-string of its file's constant (`f"{SPEC}:408:5"`)."""
    file, line, col = spec.rsplit(":", 2)
    if not (line.isdigit() and col.isdigit()):
        raise PlanError(f"{spec}: a rule's place is not file:line:col")
    return Code(f'f"{{{files[file]}}}:{line}:{col}"')  # a constant's name and two numbers
