"""How a spec becomes an IR: spec text -> parse tree -> IR (front-end by format) -> overlay."""

from __future__ import annotations

from specgen import overlay as overlay_mod
from specgen.frontends import frontend, takes_declarations
from specgen.ir import FindingLog, Protocol, settle_alternatives
from specgen.locations import SPECS
from specgen.registry import ROOT, SpecVersion, find, registry, relative

__all__ = ["ROOT", "SPECS", "SpecVersion", "build_ir", "find", "registry", "relative"]


def build_ir(spec: SpecVersion, *, with_overlay: bool = True) -> tuple[Protocol, FindingLog]:
    """Parse the spec document with its format's front-end and apply its overlay; raises
    SpecSyntaxError / SpecError / OverlayError, each naming file:line:column."""
    entries = []
    if with_overlay and spec.overlay is not None:
        entries = overlay_mod.load(spec.overlay, ROOT, spec.overlay_label)
    # names the document uses but never declares: the front-end reads them where it meets them
    declared = overlay_mod.declarations(entries, spec.version)
    build = frontend(spec.format)
    if declared and not takes_declarations(spec.format):
        first = next(iter(declared.values()))
        raise overlay_mod.OverlayError(
            f"{first.span}: {first.entry}: the {spec.format} front-end takes no declarations"
        )
    extra = {"declared": declared} if declared else {}
    protocol, log = build(
        spec.document,
        spec.label or relative(spec.document),
        spec.protocol,
        spec.version,
        dict(spec.data),
        **extra,
    )
    if entries:
        protocol = overlay_mod.apply(protocol, entries)
        log.accepted.update(overlay_mod.acceptances(entries, spec.version))
    return settle_alternatives(protocol, log), log
