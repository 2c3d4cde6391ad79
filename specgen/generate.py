"""Run every emitter over every spec and put the files in `generated/`, all or nothing.

Everything is rendered in memory first, so a spec, overlay or template error leaves
`generated/` untouched. Then a complete new tree is written next to it and swapped in with two
renames; files the run did not produce disappear (Kafka's generator prunes the same way).
"""

from __future__ import annotations

import difflib
import filecmp
import os
import shutil
import tempfile
from pathlib import Path

from specgen.emitters import amqp010, amqp10, conformance, dialogue, python_codec, spark_schema
from specgen.emitters.plan import ModulePlan, PlanError, Planner
from specgen.emitters.render import Renderer
from specgen.ir import Protocol
from specgen.locations import CHECKOUT
from specgen.specs import SpecVersion, build_ir, registry

GENERATED = CHECKOUT / "generated" if CHECKOUT else None
"""The checkout's codecs; an installed specgen has none and writes only where --out says."""

_PACKAGE_DOC = '"""Generated code: one package per protocol, one sub-package per spec version."""\n'


def render_all(
    specs: list[SpecVersion] | None = None, renderer: Renderer | None = None
) -> dict[str, str]:
    """Relative path -> content for every generated file.

    Each spec is parsed and planned once; every emitter reads that one plan. Files every version
    of a protocol shares (errors, framing, the frame reader) are rendered once per protocol
    package, from its latest version, after checking that all its versions frame alike.
    """
    specs = registry() if specs is None else specs
    renderer = renderer or Renderer()
    # py.typed: type checkers read the installed codecs' annotations (PEP 561)
    files: dict[str, str] = {"__init__.py": _PACKAGE_DOC, "py.typed": ""}
    by_package: dict[str, list[tuple[SpecVersion, ModulePlan]]] = {}
    described: dict[str, list[tuple[SpecVersion, Protocol]]] = {}
    for spec in specs:
        protocol, _ = build_ir(spec)
        if spec.format == "amqp010-xml":  # AMQP 0-10: its own model and emitter, whole package
            for name, text in amqp010.emit(spec, protocol, renderer).items():
                files[f"{spec.package}/{name}"] = text
            continue
        if protocol.typedefs:  # a self-describing type system: its own emitters
            described.setdefault(spec.package, []).append((spec, protocol))
            for name, text in amqp10.emit(spec, protocol, renderer).items():
                files[f"{spec.package_path}/{name}"] = text
            continue
        plan = Planner(protocol).plan()
        by_package.setdefault(spec.package, []).append((spec, plan))
        out = python_codec.emit(spec, plan, renderer)
        out.update(conformance.emit(spec, plan, renderer))
        out.update(spark_schema.emit(spec, plan, renderer))
        out.update(dialogue.emit(spec, protocol, renderer))  # its dialogue grammars, if any
        for name, text in out.items():
            files[f"{spec.package_path}/{name}"] = text
    for package, versions in by_package.items():
        spec, plan = next(((s, p) for s, p in versions if s.latest), versions[-1])
        for other, other_plan in versions:
            if _wire(other_plan) != _wire(plan):
                raise PlanError(
                    f"{other.document}: {other.qualified} frames differently from "
                    f"{spec.qualified}; versions of one package share their framing"
                )
        files[f"{package}/__init__.py"] = f'"""Generated codecs for {spec.protocol}."""\n'
        shared = python_codec.emit_shared(spec, plan, renderer)
        shared.update(python_codec.emit_helpers(spec, [p for _, p in versions], renderer))
        for name, text in shared.items():
            files[f"{package}/{name}"] = text
    for package, found in described.items():
        spec, protocol = next(((s, p) for s, p in found if s.latest), found[-1])
        files[f"{package}/__init__.py"] = f'"""Generated codecs for {spec.title}."""\n'
        for name, text in amqp10.emit_shared(spec, protocol, renderer).items():
            files[f"{package}/{name}"] = text
    return files


def _wire(plan: ModulePlan) -> tuple[object, ...]:
    """What the shared framing module says about a version's frames: field widths and roles,
    the length rule, trailer, body keys and preambles. Signedness is left out (the early Streams
    reference calls the same bytes int32 where 4.0 says uint32); each version's codec keeps its
    own header struct."""
    f = plan.frame
    return (
        [(h.width, h.role, h.name) for h in f.header],
        f.counts,
        f.trailer_bytes,
        [(b.when, b.fmt) for b in f.body_keys],
        sorted(f.preambles.items()),
    )


class OutputError(ValueError):
    """An output folder the generator will not replace."""


def committed(command: str, instead: str) -> Path:
    """The checkout's `generated/`, which the bare `generate` rewrites and `check` compares.
    Installed, there is none: refusing here keeps the codecs in site-packages untouched."""
    if GENERATED is None:
        raise OutputError(
            f"{command}: this specgen is installed, not run from its checkout, so it has no "
            f"generated/ to {instead}"
        )
    return GENERATED


def write_tree(files: dict[str, str], target: Path, *, fresh_only: bool = False) -> None:
    """Replace `target` with exactly `files`, swapping whole directories. With `fresh_only`
    (a folder the user named), `target` must be new, empty, or generated by us before: a
    folder of other files is never swapped away."""
    if fresh_only and target.exists():
        if not target.is_dir():
            raise OutputError(f"{target}: exists and is not a folder")
        ours = target / "__init__.py"
        is_ours = ours.is_file() and ours.read_text(encoding="utf-8") == _PACKAGE_DOC
        if any(target.iterdir()) and not is_ours:
            raise OutputError(f"{target}: not empty and not made by specgen generate; not replaced")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".generated-", dir=target.parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        old = target.parent / f"{staging.name}-old"
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def generate(target: Path | None = None) -> dict[str, str]:
    """Every registered spec into `target` (default: the checkout's generated/)."""
    target = target or committed("generate", "rewrite; give SPEC --out DIR, or --out DIR alone")
    files = render_all()
    write_tree(files, target)
    return files


def stale(target: Path | None = None) -> list[str]:
    """Unified diffs between what the generator makes now and what `target` (default: the
    checkout's generated/) holds."""
    target = target or committed("check", "compare; run check in specgen's checkout")
    files = render_all()
    with tempfile.TemporaryDirectory(prefix="specgen-check-") as tmp:
        fresh = Path(tmp) / "generated"
        write_tree(files, fresh)
        return _diff_trees(fresh, target)


def _diff_trees(fresh: Path, committed: Path) -> list[str]:
    def listing(root: Path) -> set[str]:
        if not root.exists():
            return set()
        return {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(".pyc")
        }

    new, old = listing(fresh), listing(committed)
    diffs = []
    for rel in sorted(new | old):
        a, b = committed / rel, fresh / rel
        if rel in new and rel in old and filecmp.cmp(a, b, shallow=False):
            continue
        before = a.read_text(encoding="utf-8").splitlines(keepends=True) if rel in old else []
        after = b.read_text(encoding="utf-8").splitlines(keepends=True) if rel in new else []
        diffs.append(
            "".join(
                difflib.unified_diff(
                    before, after, f"generated/{rel} (committed)", f"generated/{rel} (fresh)"
                )
            )
            or f"generated/{rel}: differs\n"
        )
    return diffs
