"""How a spec becomes an IR: spec text -> parse tree -> IR (front-end by format) -> overlay."""

from __future__ import annotations

from specgen import overlay as overlay_mod
from specgen.frontends import frontend
from specgen.ir import FindingLog, Protocol, settle_alternatives
from specgen.locations import SPECS
from specgen.registry import ROOT, SpecVersion, find, registry, relative

__all__ = ["ROOT", "SPECS", "SpecVersion", "build_ir", "find", "registry", "relative"]


def build_ir(spec: SpecVersion, *, with_overlay: bool = True) -> tuple[Protocol, FindingLog]:
    """Parse the spec document with its format's front-end and apply its overlay; raises
    SpecSyntaxError / SpecError / OverlayError, each naming file:line:column."""
    protocol, log = frontend(spec.format)(
        spec.document,
        spec.label or relative(spec.document),
        spec.protocol,
        spec.version,
        dict(spec.data),
    )
    if with_overlay and spec.overlay is not None:
        protocol = overlay_mod.apply(
            protocol, overlay_mod.load(spec.overlay, ROOT, spec.overlay_label)
        )
    return settle_alternatives(protocol, log), log
