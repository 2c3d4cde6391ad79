"""Each package's code comes from the back-end of its layout, which writes the modules it lists
and no others; the versions of one package share one layout."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest
from test_generated_surface import shared_modules

from specgen import generate
from specgen.emitters import backends, python_codec
from specgen.emitters.plan import SENDER_MODULES, ModulePlan, PlanError, Planner
from specgen.specs import ROOT, SpecVersion, build_ir, registry

LAYOUTS = {
    "amqp_0_10": "packed",
    "amqp_0_9_1": "fused",
    "amqp_1_0": "described",
    "amqp_fast_0_8": "fused",
    "rabbitmq_stream": "fused",
}


def _plan(spec: SpecVersion) -> ModulePlan:
    protocol, _ = build_ir(spec)
    return Planner(protocol).plan()


@pytest.mark.parametrize("spec", registry(), ids=lambda s: s.qualified)
def test_a_version_is_written_by_its_layouts_backend(spec: SpecVersion) -> None:
    backend = backends.of([(spec, _plan(spec))])
    assert backend.layout == LAYOUTS[spec.package]
    listed = set(backend.version_modules)
    folder = ROOT / "generated" / spec.package_path
    # every layout's, written beside the back-end's: the dialogue grammars and the spec's rules
    written = {PurePosixPath(p.name).stem for p in folder.glob("*.py")} - {"dialogue", "rules"}
    # "<class>": a module per spec class, named after it (0-10's connection, session, ...)
    per_class = written - listed if "<class>" in listed else set()
    # "<sender>": a spec without classes, a module per sender and one for the structures
    if "<sender>" in listed:
        per_class = written & {*SENDER_MODULES.values(), "structures"}
    assert written - per_class <= listed, f"{spec}: writes {sorted(written - listed)} unlisted"
    assert {m for m in listed if not m.startswith("<")} <= written


@pytest.mark.parametrize("package", sorted(LAYOUTS))
def test_a_packages_own_modules_are_listed_by_its_backend(package: str) -> None:
    backend = backends.BACKENDS[LAYOUTS[package]]
    frame_layer = {"__init__", "errors", "framing", "frame_reader"}
    folder = ROOT / "generated" / package
    own = {p.stem for p in folder.glob("*.py")} - frame_layer
    # "<class>": the shared messages of one spec class, framed by `shared`
    per_class = {p.stem for p in shared_modules(package)} - {"shared"}
    if per_class:
        assert "<class>" in backend.package_modules
    assert own - per_class <= set(backend.package_modules)


def test_versions_laid_out_differently_are_refused() -> None:
    by_layout: dict[str, SpecVersion] = {}
    for spec in registry():
        by_layout.setdefault(LAYOUTS[spec.package], spec)
    pairs = [(s, _plan(s)) for s in (by_layout["fused"], by_layout["described"])]
    with pytest.raises(PlanError, match="one package has one layout"):
        backends.of(pairs)


def test_the_runtime_every_package_shares_is_above_them_and_neutral() -> None:
    """`violations` and `automata` are written once, beside the protocol packages, from their
    templates alone: no package has its own copy, and no protocol's name is in them."""
    top = ROOT / "generated"
    assert {p.stem for p in top.glob("*.py")} == {"__init__", *generate.RUNTIME}
    for package in LAYOUTS:
        assert not {f"{name}.py" for name in generate.RUNTIME} & {
            p.name for p in (top / package).rglob("*.py")
        }, package
    names = {s.title for s in registry()} | {s.package for s in registry()}
    for name in generate.RUNTIME:
        text = (top / f"{name}.py").read_text()
        assert "specs/" not in text and not {n for n in names if n in text}, name


def test_a_name_two_reexported_modules_share_stops_generation() -> None:
    """A version's `__init__` takes its commands' and enums' names through `import *`: one both
    export would hide the other without a word, so generation stops, naming both modules."""
    spec = next(s for s in registry() if s.package == "amqp_0_9_1")
    python_codec._exported_once(spec, __init__=["VERSION"], commands=["Basic"], enums=["Tune"])
    with pytest.raises(PlanError, match=r"'Tune' is exported by both commands and enums"):
        python_codec._exported_once(spec, commands=["Tune", "decode"], enums=["Tune"])
