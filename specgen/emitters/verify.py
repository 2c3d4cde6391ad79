"""The plan checked against the document it came from, before anything is rendered: what a
document declares, the generated code has; keys are unique; the protocol header is the one its
version's rule gives; and no finding that changes the wire passes unaccepted.

The document is read a second time here with the standard library's XML parser, not with the
front-end, so a front-end that silently skips what it does not recognise (a section of another
name, a version number of another spelling) is caught by a reader that knows nothing of it.
Every refusal is one line, `file:line:col: what is wrong -> what would fix it`, raised as a
`VerifyError` (a PlanError: exit 2, nothing written).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from specgen.emitters.naming import PlanError
from specgen.emitters.plan import ModulePlan
from specgen.frontends.amqp_versions import AMQP10_HEADERS, CLASS_AND_METHOD, fallback_header
from specgen.ir import FindingLog, Protocol, SourceSpan, spelled_number
from specgen.registry import SpecVersion, relative

WIRE_FINDINGS = {
    "type-typo": "a type name read as the known type it is one letter from",
    "version-unknown": "a version whose protocol header no rule gives",
}
"""Lint findings whose resolution decides bytes on the wire: `generate` refuses them unless
accepted by name (`--accept CODE`, or an overlay entry `{"op": "accept", "target":
"finding:CODE"}`)."""

ACCEPTABLE = {
    **WIRE_FINDINGS,
    "duplicate-key": "two commands under one key, which a decoder cannot tell apart",
}
"""Every reading `--accept` (or an overlay's accept entry) can take: the wire findings, and the
plan's own check of keys."""


class VerifyError(PlanError):
    """The generated package would not be what the document declares."""


def verify(spec: SpecVersion, protocol: Protocol, log: FindingLog, plan: ModulePlan) -> None:
    """Raise VerifyError at the first thing the plan gets wrong about the document."""
    accepted = set(spec.accept) | set(log.accepted)
    for finding in log.items:
        if finding.code in WIRE_FINDINGS and finding.code not in accepted:
            raise VerifyError(
                f"{finding.span}: {finding.code}: {finding.message} -> fix the document, or "
                f"accept the reading ({finding.resolution}) with --accept {finding.code} or an "
                f'overlay entry {{"op": "accept", "target": "finding:{finding.code}"}}'
            )
    _unique_keys(plan, accepted)
    if spec.format == "amqp-xml":
        _class_and_method(spec, plan)
    elif spec.format == "amqp010-xml":
        _controls_and_commands(spec, plan)
    elif spec.format == "amqp10-xml":
        _performatives(spec, protocol, plan)


# ---- keys ---------------------------------------------------------------------------------


def _senders(sender: str | None) -> set[str]:
    return {"client", "server"} if sender in (None, "", "both") else {str(sender)}


def _unique_keys(plan: ModulePlan, accepted: set[str]) -> None:
    if "duplicate-key" in accepted:
        return
    seen: dict[tuple[object, ...], tuple[str, object]] = {}
    keyed: list[tuple[tuple[object, ...], str, object]] = []  # key, class, span
    for m in plan.messages:
        # a request and its response may share a key (the early Streams reference has no
        # response flag: the conversation tells them apart); two commands may not
        for side in sorted(_senders(m.sender)):
            keyed.append(((side, m.ident, m.version), m.command, m.message.span))
    if plan.packed is not None:
        for s in plan.packed.methods:
            keyed.append(((s.kind, s.class_code, s.code), s.py, s.span))
    if plan.described is not None:
        for c in plan.described.classes:
            if c.descriptor_code is not None:
                keyed.append((("descriptor", c.descriptor_code), c.klass, c.span))
    for key, name, span in keyed:
        if key in seen and seen[key][0] != name:
            first, first_span = seen[key]
            raise VerifyError(
                f"{span or first_span}: duplicate-key: {name} has the key of {first} "
                f"(at {first_span}): a decoder could not tell them apart -> give one of them "
                "its own key, or accept with --accept duplicate-key"
            )
        seen.setdefault(key, (name, span))


# ---- what the document declares ----------------------------------------------------------


class _Document:
    """One file of the document, read once: its text, and its tree by the standard library's
    reader (None when that cannot read it: an XML inside prose, entities it does not know;
    then the front-end's count stands alone)."""

    def __init__(self, path: Path, label: str) -> None:
        self.label = label
        self.text = ""
        self.root: ET.Element | None = None
        try:
            self.text = path.read_text(encoding="utf-8", errors="replace")
            self.root = ET.fromstring(self.text)  # noqa: S314 - a local spec document
        except (ET.ParseError, ValueError, OSError):
            pass  # no tree: the checks that need one are left to the front-end

    def find(
        self, tag: str, name: str | None, within: tuple[str, str | None] | None = None
    ) -> SourceSpan:
        """Where an element starts in the text (ElementTree keeps no positions): only asked
        for when a refusal names it."""
        start = 0
        if within is not None:
            outer = re.search(_pattern(*within), self.text)
            start = outer.start() if outer else 0
        m = re.compile(_pattern(tag, name)).search(self.text, start)
        if m is None:
            return SourceSpan(self.label, 1)
        line = self.text.count("\n", 0, m.start()) + 1
        column = m.start() - (self.text.rfind("\n", 0, m.start()) + 1) + 1
        return SourceSpan(self.label, line, column)


def _pattern(tag: str, name: str | None) -> str:
    if not name:
        return rf"<{tag}\b"
    return rf"<{tag}\b[^>]*?name\s*=\s*[\"']\s*{re.escape(name.strip())}\s*[\"']"


@dataclass(frozen=True)
class _Declared:
    key: tuple[object, ...]
    what: str  # "method basic.qos"
    tag: str  # where it stands: the element, its name, the element it is within
    name: str | None
    within: tuple[str, str | None] | None = None


def _document(spec: SpecVersion) -> _Document:
    return _Document(spec.document, spec.label or relative(spec.document))


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _children(el: ET.Element, tag: str) -> list[ET.Element]:
    return [c for c in el if _local(c.tag) == tag]


def _number(text: str | None) -> int | None:
    """An integer in any spelling real copies use (the IR's one reader), else None."""
    value = spelled_number(text or "")
    return value if isinstance(value, int) else None


def _missing(
    doc: _Document, declared: Iterable[_Declared], generated: set[tuple[object, ...]]
) -> None:
    for d in declared:
        if d.key not in generated:
            raise VerifyError(
                f"{doc.find(d.tag, d.name, d.within)}: the document declares {d.what}, which "
                "the generated package would not have -> a front-end defect: report it with "
                "this document; an overlay cannot add it"
            )


def _class_and_method(spec: SpecVersion, plan: ModulePlan) -> None:
    doc = _document(spec)
    if doc.root is None:
        return
    declared: list[_Declared] = []
    for cls in _children(doc.root, "class"):
        class_index = _number(cls.get("index"))
        for method in _children(cls, "method"):
            index = _number(method.get("index"))
            if class_index is None or index is None:
                continue  # the front-end refuses it, at its line
            what = f"method {cls.get('name', '?').strip()}.{method.get('name', '?').strip()}"
            within = ("class", cls.get("name"))
            declared.append(
                _Declared((class_index, index), what, "method", method.get("name"), within)
            )
    generated: set[tuple[object, ...]] = {
        tuple(m.ident[-2:]) for m in plan.messages if len(m.ident) >= 2
    }
    _missing(doc, declared, generated)
    _header(doc, doc.root, plan)


def _header(doc: _Document, root: ET.Element, plan: ModulePlan) -> None:
    parts = [root.get(p) for p in ("major", "minor", "revision")]
    numbers = tuple(_number(p) for p in parts if p is not None)
    if None in numbers or len(numbers) < 2:
        return  # the front-end refuses it, at its attribute
    version = tuple(n for n in numbers if n is not None)
    known = CLASS_AND_METHOD.get(version)
    expected = known.header if known is not None else fallback_header(version)
    actual = plan.frame.preambles.get("client")
    if actual is not None and actual != expected:
        rule = known.rule if known is not None else "the shape of its neighbours"
        raise VerifyError(
            f"{doc.find('amqp', None)}: the protocol header would be {actual!r}, but version "
            f"{'-'.join(map(str, version))} opens with {expected!r} ({rule}) -> correct the "
            "overlay or front-end that changed it"
        )


def _controls_and_commands(spec: SpecVersion, plan: ModulePlan) -> None:
    doc = _document(spec)
    if doc.root is None or plan.packed is None:
        return
    declared: list[_Declared] = []
    for cls in _children(doc.root, "class"):
        class_code = _number(cls.get("code"))
        for kind in ("control", "command"):
            for el in _children(cls, kind):
                code = _number(el.get("code"))
                if class_code is None or code is None:
                    continue
                what = f"{kind} {cls.get('name', '?')}.{el.get('name', '?')}"
                within = ("class", cls.get("name"))
                declared.append(
                    _Declared((kind, class_code, code), what, kind, el.get("name"), within)
                )
    generated: set[tuple[object, ...]] = {
        (s.kind, s.class_code, s.code) for s in plan.packed.methods
    }
    _missing(doc, declared, generated)
    major, minor = _number(doc.root.get("major")), _number(doc.root.get("minor"))
    if major is not None and minor is not None and 0 <= major < 256 and 0 <= minor < 256:
        expected = b"AMQP\x01\x01" + bytes((major, minor))
        actual = next(iter(plan.frame.preambles.values()), expected)
        if actual != expected:
            raise VerifyError(
                f"{doc.find('amqp', None)}: the protocol header would be {actual!r}, but "
                f"AMQP {major}-{minor} opens with {expected!r} ('AMQP', 1, 1, major, minor: "
                "0-10 section 4.1) -> correct the overlay or front-end that changed it"
            )


def _performatives(spec: SpecVersion, protocol: Protocol, plan: ModulePlan) -> None:
    if plan.described is None:
        return
    files = {t.span.file for t in protocol.typedefs if t.span is not None}
    frames = [c for c in plan.described.classes if set(c.provides) & {"frame", "sasl-frame"}]
    generated: set[tuple[object, ...]] = {(c.name,) for c in frames}
    for file in sorted(files):
        doc = _Document(spec.document.parent / Path(file).name, file)
        if doc.root is None:
            continue
        declared: list[_Declared] = []
        for t in doc.root.iter():
            if _local(t.tag) != "type":
                continue
            provides = {p.strip() for p in (t.get("provides") or "").split(",")}
            if provides & {"frame", "sasl-frame"}:
                name = (t.get("name") or "?").strip()
                declared.append(_Declared((name,), f"frame body {name}", "type", name))
        _missing(doc, declared, generated)
    if frames:
        # a document of the transport alone states only the AMQP header (TLS and SASL are the
        # security part's); whatever it states must be 1.0's
        headers = {value for _, value, _ in plan.described.headers}
        if AMQP10_HEADERS["AMQP"] not in headers or headers - set(AMQP10_HEADERS.values()):
            raise VerifyError(
                f"{spec.label or relative(spec.document)}:1:1: the protocol headers would be "
                f"{sorted(headers)}; AMQP 1.0's are {sorted(AMQP10_HEADERS.values())} -> "
                "correct the document's header constants or the overlay that changed them"
            )
