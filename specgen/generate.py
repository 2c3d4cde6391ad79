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
import time
from pathlib import Path

from specgen import outdir
from specgen.emitters import conformance, dialogue, python_codec, spark_schema
from specgen.emitters.plan import ModulePlan, PlanError, Planner
from specgen.emitters.render import Renderer
from specgen.locations import CHECKOUT
from specgen.progress import Progress, seconds
from specgen.specs import SpecVersion, build_ir, registry

GENERATED = CHECKOUT / "generated" if CHECKOUT else None
"""The checkout's codecs; an installed specgen has none and writes only where --out says."""

_PACKAGE_DOC = '"""Generated code: one package per protocol, one sub-package per spec version."""\n'
_PROTOCOL_DOC = '"""Generated codecs for '  # how each protocol package's __init__ starts


def render_all(
    specs: list[SpecVersion] | None = None,
    renderer: Renderer | None = None,
    progress: Progress | None = None,
) -> dict[str, str]:
    """Relative path -> content for every generated file (with `progress`, a line per spec as
    it is done: a whole run takes most of a minute).

    Each spec is parsed and planned once; every emitter reads that one plan. Files every version
    of a protocol shares (errors, framing, the frame reader) are rendered once per protocol
    package, from its latest version, after checking that all its versions frame alike; so is
    the code of every message the versions rendered together lay out alike (`shared.py`).
    """
    specs = registry() if specs is None else specs
    renderer = renderer or Renderer()
    # py.typed: type checkers read the installed codecs' annotations (PEP 561)
    files: dict[str, str] = {"__init__.py": _PACKAGE_DOC, "py.typed": ""}
    by_package: dict[str, list[tuple[SpecVersion, ModulePlan]]] = {}
    codes: dict[str, list[python_codec.VersionCode]] = {}
    schemas: dict[str, list[spark_schema.SchemaCode]] = {}
    spent: dict[str, tuple[float, int]] = {}  # per version: seconds and files before its codec
    for spec in specs:
        start, before = time.monotonic(), len(files)
        protocol, _ = build_ir(spec)
        plan = Planner(protocol).plan()
        by_package.setdefault(spec.package, []).append((spec, plan))
        codes.setdefault(spec.package, []).append(python_codec.prepare(spec, plan, renderer))
        schemas.setdefault(spec.package, []).append(spark_schema.prepare(spec, plan, renderer))
        out = conformance.emit(spec, plan, renderer)
        out.update(dialogue.emit(spec, protocol, renderer))  # its dialogue grammars, if any
        for name, text in out.items():
            files[f"{spec.package_path}/{name}"] = text
        spent[spec.qualified] = (time.monotonic() - start, len(files) - before)
    for package, prepared in codes.items():
        # what every version renders alike is generated once, in the package's shared module
        common = python_codec.shared_blocks(prepared, renderer)
        builders = spark_schema.shared_builders(schemas[package], prepared, common)
        for code, schema in zip(prepared, schemas[package], strict=True):
            start = time.monotonic()
            out = python_codec.emit(code, renderer, common)
            out.update(spark_schema.emit(schema, renderer, builders))
            for name, text in out.items():
                files[f"{code.spec.package_path}/{name}"] = text
            took, count = spent[code.spec.qualified]
            _done(progress, code.spec, count + len(out), start - took)
        shared = python_codec.emit_shared_codecs(prepared, common, renderer)
        classes = {name for b in prepared[0].blocks if b.ident in common for name in b.defines}
        shared.update(spark_schema.emit_shared(schemas[package], builders, classes, renderer))
        for name, text in shared.items():
            files[f"{package}/{name}"] = text
    for package, versions in by_package.items():
        spec, plan = next(((s, p) for s, p in versions if s.latest), versions[-1])
        for other, other_plan in versions:
            if _wire(other_plan) != _wire(plan):
                raise PlanError(
                    f"{other.document}: {other.qualified} frames differently from "
                    f"{spec.qualified}; versions of one package share their framing"
                )
        files[f"{package}/__init__.py"] = f'{_PROTOCOL_DOC}{spec.protocol}."""\n'
        shared = python_codec.emit_shared(spec, plan, renderer)
        shared.update(python_codec.emit_helpers(spec, [p for _, p in versions], renderer))
        for name, text in shared.items():
            files[f"{package}/{name}"] = text
    return files


def _done(progress: Progress | None, spec: SpecVersion, files: int, start: float) -> None:
    if progress is not None:
        progress.line(f"{spec.qualified} rendered, {files} files of its own ({seconds(start)})")


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


OutputError = outdir.OutputError


def committed(command: str, instead: str) -> Path:
    """The checkout's `generated/`, which the bare `generate` rewrites and `check` compares.
    Installed, there is none: refusing here keeps the codecs in site-packages untouched."""
    if GENERATED is None:
        raise OutputError(
            f"{command}: this specgen is installed, not run from its checkout, so it has no "
            f"generated/ to {instead}"
        )
    return GENERATED


def write_tree(
    files: dict[str, str],
    target: Path,
    *,
    fresh_only: bool = False,
    overwrite: bool = False,
) -> None:
    """Replace `target` with exactly `files`, swapping whole directories. With `fresh_only`
    (a folder the user named) the output folder rule applies (`outdir`): a folder that holds
    anything needs `overwrite`, and a folder of other files keeps them (only the names
    generated are replaced)."""
    if fresh_only:
        outdir.check(target, "generate", overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".generated-", dir=target.parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if fresh_only and target.is_dir() and any(target.iterdir()):
            # --overwrite: what generate wrote there before (its packages, also of specs not
            # rendered this time) and the names it writes now go; other files stay
            outdir.clear(target, {rel.split("/")[0] for rel in files} | _packages(target))
            for entry in staging.iterdir():
                os.rename(entry, target / entry.name)
            return
        old = target.parent / f"{staging.name}-old"
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _packages(target: Path) -> set[str]:
    """The protocol packages in `target` that generate wrote (their __init__ says so)."""
    found = set()
    for entry in target.iterdir():
        marker = entry / "__init__.py"
        if marker.is_file() and marker.read_text(encoding="utf-8").startswith(_PROTOCOL_DOC):
            found.add(entry.name)
    return found


def generate(target: Path | None = None, progress: Progress | None = None) -> dict[str, str]:
    """Every registered spec into `target` (default: the checkout's generated/)."""
    target = target or committed("generate", "rewrite; give SPEC --out DIR, or --out DIR alone")
    files = render_all(progress=progress)
    write_tree(files, target)
    return files


def stale(
    target: Path | None = None,
    progress: Progress | None = None,
    specs: list[SpecVersion] | None = None,
) -> list[str]:
    """Unified diffs between what the generator makes now (from `specs`, default every
    registered one) and what `target` (default: the checkout's generated/) holds."""
    default = target is None
    target = target or committed("check", "compare; run check in specgen's checkout")
    files = render_all(specs, progress=progress)
    # generated/ holds nothing else; a folder named with --out may keep other files beside
    ours = None if default or target == GENERATED else {rel.split("/")[0] for rel in files}
    label = "generated" if target == GENERATED else target.as_posix().rstrip("/")
    with tempfile.TemporaryDirectory(prefix="specgen-check-") as tmp:
        fresh = Path(tmp) / "generated"
        write_tree(files, fresh)
        return _diff_trees(fresh, target, label, ours)


def _diff_trees(
    fresh: Path, committed: Path, label: str = "generated", ours: set[str] | None = None
) -> list[str]:
    def listing(root: Path) -> set[str]:
        if not root.exists():
            return set()
        return {
            p.relative_to(root).as_posix()
            for p in root.rglob("*")
            if p.is_file()
            and "__pycache__" not in p.parts
            and not p.name.endswith(".pyc")
            and (ours is None or p.relative_to(root).parts[0] in ours)
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
                    before, after, f"{label}/{rel} (committed)", f"{label}/{rel} (fresh)"
                )
            )
            or f"{label}/{rel}: differs\n"
        )
    return diffs
