"""One back-end per layout of a version's messages, behind one interface.

A plan lays its messages out one of three ways (`ModulePlan.layout`), and the back-end of that
layout writes every output kind for it:

- `Fused`: each message's fixed-width fields fused into precompiled `struct` runs (Streams,
  AMQP 0-8/0-9/0-9-1, RFC 006); versions of a package share what they lay out alike, and a
  spec without classes (Streams) has a version's other messages a module per sender;
- `Packed`: packing-flag structs carried in segments of frames (AMQP 0-10), a module per spec
  class;
- `Described`: self-describing values, each type a descriptor and a list (AMQP 1.0).

`generate` gives a package's versions to their back-end: `prepare` each version, then `files`
for the versions and the package. Each back-end lists the modules it writes; adding an output
kind (a column decoder, say) is one more entry and one more call in each.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from specgen.emitters import conformance, python_codec, spark_schema
from specgen.emitters.plan import ModulePlan, PlanError
from specgen.emitters.render import Renderer
from specgen.registry import SpecVersion

Files = dict[str, str]  # module file name -> its text


@dataclass
class Version:
    """One version as its back-end prepared it, before anything is rendered that depends on
    the package's other versions."""

    spec: SpecVersion
    plan: ModulePlan
    prepared: dict[str, Any] = field(default_factory=dict)  # per output kind, the back-end's


class Backend(ABC):
    """Writes the code of the versions of one package, all laid out as `layout` says."""

    layout: ClassVar[str]
    version_modules: ClassVar[tuple[str, ...]]  # what it writes into a version's package
    package_modules: ClassVar[tuple[str, ...]]  # and beside them, once for every version

    def prepare(self, spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> Version:
        """What a version needs before its package's other versions are known."""
        return Version(spec, plan)

    @abstractmethod
    def files(self, versions: list[Version], renderer: Renderer) -> list[tuple[str, Files]]:
        """Each version's files (by its package path), then the package's own (by the package
        name): every module this back-end writes."""

    def _common(self, versions: list[Version], renderer: Renderer) -> Files:
        """The package's frame layer, the same for every layout: errors, framing, frame reader."""
        latest = _latest(versions)
        return python_codec.emit_shared(latest.spec, latest.plan, renderer)


class Fused(Backend):
    layout = "fused"
    # "<sender>": where the spec has no classes, a module per sender of the version's own
    # messages (`client`, `server`, `either`) and `structures` for what they read
    version_modules = (
        "commands",
        "<sender>",
        "enums",
        "__init__",
        "spark_schema",
        "test_conformance",
    )
    # the shared module of a spec without classes, or per spec class and `named` beside it
    package_modules = ("shared", "<class>", "named", "shared_spark", "base", "records", "values")

    def prepare(self, spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> Version:
        return Version(
            spec,
            plan,
            {
                "codec": python_codec.prepare(spec, plan, renderer),
                "schema": spark_schema.prepare(spec, plan, renderer),
            },
        )

    def files(self, versions: list[Version], renderer: Renderer) -> list[tuple[str, Files]]:
        codes = [v.prepared["codec"] for v in versions]
        schemas = [v.prepared["schema"] for v in versions]
        # what every version lays out alike is generated once, in the package's shared module
        common = python_codec.shared_blocks(codes, renderer)
        types = spark_schema.shared_types(schemas)
        out: list[tuple[str, Files]] = []
        placement = python_codec.shared_placement(codes, common) if common else {}
        for v, code, schema in zip(versions, codes, schemas, strict=True):
            files = python_codec.emit(code, renderer, common, placement)
            files |= spark_schema.emit(schema, renderer, types)
            files |= conformance.emit(v.spec, v.plan, renderer)
            out.append((v.spec.package_path, files))
        package = python_codec.emit_shared_codecs(codes, common, placement, renderer)
        package |= spark_schema.emit_shared(schemas, types, renderer)
        latest = _latest(versions)
        plans = [v.plan for v in versions]
        package |= python_codec.fused_helpers(latest.spec, latest.plan, plans, renderer)
        out.append((latest.spec.package, package | self._common(versions, renderer)))
        return out


class Packed(Backend):
    layout = "packed"
    version_modules = (
        "commands",
        "<class>",
        "enums",
        "__init__",
        "spark_schema",
        "test_conformance",
    )
    package_modules = ("values",)

    def files(self, versions: list[Version], renderer: Renderer) -> list[tuple[str, Files]]:
        out = _each(
            versions,
            renderer,
            python_codec.emit_packed,
            spark_schema.emit_packed,
            conformance.emit_packed,
        )
        latest = _latest(versions)
        package = python_codec.packed_values(latest.spec, [v.plan for v in versions], renderer)
        out.append((latest.spec.package, package | self._common(versions, renderer)))
        return out


class Described(Backend):
    layout = "described"
    # "<class>": a module per document of the spec (1.0's transport, messaging, ...)
    version_modules = (
        "commands",
        "<class>",
        "enums",
        "__init__",
        "spark_schema",
        "test_conformance",
    )
    package_modules = ("values",)

    def files(self, versions: list[Version], renderer: Renderer) -> list[tuple[str, Files]]:
        def schema(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> Files:
            return python_codec.described_files(spec, plan, renderer, ("spark_schema",))

        def tests(spec: SpecVersion, plan: ModulePlan, renderer: Renderer) -> Files:
            return python_codec.described_files(spec, plan, renderer, ("test_conformance",))

        out = _each(versions, renderer, python_codec.emit_described, schema, tests)
        latest = _latest(versions)
        package = python_codec.described_values(latest.spec, [v.plan for v in versions], renderer)
        out.append((latest.spec.package, package | self._common(versions, renderer)))
        return out


BACKENDS: dict[str, Backend] = {b.layout: b for b in (Fused(), Packed(), Described())}


def of(plans: list[tuple[SpecVersion, ModulePlan]]) -> Backend:
    """The back-end of a package's versions, which must all be laid out alike."""
    layouts = {plan.layout for _, plan in plans}
    if len(layouts) != 1:
        spec = plans[0][0]
        raise PlanError(
            f"{spec.document}: the versions of {spec.package} lay their messages out "
            f"differently ({', '.join(sorted(layouts))}); one package has one layout"
        )
    return BACKENDS[layouts.pop()]


def _each(
    versions: list[Version],
    renderer: Renderer,
    *kinds: Callable[[SpecVersion, ModulePlan, Renderer], Files],
) -> list[tuple[str, Files]]:
    """Each version's files, one output kind after another."""
    out: list[tuple[str, Files]] = []
    for v in versions:
        files: Files = {}
        for kind in kinds:
            files |= kind(v.spec, v.plan, renderer)
        out.append((v.spec.package_path, files))
    return out


def _latest(versions: list[Version]) -> Version:
    return next((v for v in versions if v.spec.latest), versions[-1])
