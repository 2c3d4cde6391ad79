"""Run every emitter over every spec and put the files in `generated/`, all or nothing.

Everything is rendered in memory first, so a spec, overlay or template error leaves
`generated/` untouched. Then a complete new tree is written next to it and swapped in with two
renames; files the run did not produce disappear (Kafka's generator prunes the same way).
"""

from __future__ import annotations

import difflib
import filecmp
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from specgen import format_cache, outdir
from specgen.emitters import backends, dialogue, pytext, rules
from specgen.emitters.plan import ModulePlan, PlanError, Planner
from specgen.emitters.render import Renderer
from specgen.emitters.verify import verify
from specgen.format_cache import MANIFEST, Formatter
from specgen.locations import CHECKOUT, CODECS
from specgen.progress import Progress
from specgen.specs import SpecVersion, build_ir, registry

GENERATED = CHECKOUT / "generated" if CHECKOUT else None
"""The checkout's codecs; an installed specgen has none and writes only where --out says."""

RUNTIME = ("arrow_columns", "automata", "lazy_init", "violations")
"""The top-level modules of specgen_codecs: what every protocol's generated code shares."""

_PACKAGE_DOC = '"""Generated code: one package per protocol, one sub-package per spec version."""\n'
_PROTOCOL_DOC = '"""Generated codecs for '  # how each protocol package's __init__ starts


def top_level(renderer: Renderer) -> dict[str, str]:
    """The files above the protocol packages: `__init__`, py.typed (type checkers read the
    codecs' annotations, PEP 561) and the runtime every package's rules and dialogue modules
    share, protocol-neutral (as Kaitai Struct's parsers share one runtime library)."""
    files = {"__init__.py": _PACKAGE_DOC, "py.typed": ""}
    for name in RUNTIME:
        files[f"{name}.py"] = renderer.runtime(f"python/{name}.py.j2")
    return files


def render_all(
    specs: list[SpecVersion] | None = None,
    renderer: Renderer | None = None,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
    cached: bool = True,
) -> dict[str, str]:
    """Relative path -> content for every generated file (with `progress`, a line per spec as
    it is done). `render` says how, and what `jobs` and `cached` mean."""
    return render(specs, renderer, progress, jobs=jobs, cached=cached).files


class Rendered:
    """A run's files, and the formatting it did: the manifest generate writes beside them."""

    def __init__(self, files: dict[str, str], formatter: Formatter, formatted: int) -> None:
        self.files = files
        self.formatter = formatter  # `used` holds the keys of every worker's run
        self.formatted = formatted  # modules black formatted (the others came from a store)


def render(
    specs: list[SpecVersion] | None = None,
    renderer: Renderer | None = None,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
    cached: bool = True,
) -> Rendered:
    """Every generated file, and what formatting them took.

    Each spec is parsed and planned once; every emitter reads that one plan. Files every version
    of a protocol shares (errors, framing, the frame reader) are rendered once per protocol
    package, from its latest version, after checking that all its versions frame alike; so is
    the code of every message the versions rendered together lay out alike (`shared.py`).

    Protocol packages depend on nothing of each other, so up to `jobs` of them (default: the
    cores this process may use) render at once in forked worker processes; the files are put
    together in the registry's order whichever worker finishes first, so the output is the
    same byte for byte. Off Linux (no safe fork), with one package or one job, or when the pool
    cannot start, they render one after the other here. A package that fails in a worker is
    rendered again here, so its error (a spec's file:line:column...) is the one a serial run
    raises. With `cached`, black's output comes from the manifest beside the checkout's
    generated/ and the user's cache when they know the text (`format_cache`); without, black
    formats every module. A `renderer` given brings its own formatter, and renders everything here.
    """
    specs = registry() if specs is None else specs
    pooled = renderer is None  # a renderer given (its formatter, its templates) stays here
    if renderer is None:
        renderer = Renderer(formatter=Formatter.default(CODECS, cached))
    packages: dict[str, list[SpecVersion]] = {}
    for spec in specs:
        packages.setdefault(spec.package, []).append(spec)
    files = top_level(renderer)
    done = _parallel(list(packages.values()), renderer, progress, jobs) if pooled else {}
    formatted = 0
    for package in packages.values():
        result = done.get(package[0].package)
        if result is None:  # serial, or failed in a worker: here, raising what it raises
            before = renderer.formatter.ran
            out, timings = _render_package(package, renderer)
            _report(progress, timings)
            formatted += renderer.formatter.ran - before
        else:
            out, timings, used, ran = result
            renderer.formatter.used.update(used)
            formatted += ran
        files.update(out)
    return Rendered(files, renderer.formatter, formatted)


_Timings = list[tuple[str, int, float]]  # per version: its name, its files, seconds
_Result = tuple[dict[str, str], _Timings, dict[str, str], int]


def _parallel(
    packages: list[list[SpecVersion]],
    renderer: Renderer,
    progress: Progress | None,
    jobs: int | None,
) -> dict[str, _Result]:
    """The packages rendered in worker processes, by package name; those missing are left for
    the caller to render serially (all of them when there is no pool)."""
    jobs = min(jobs or _cores(), len(packages))
    if jobs < 2 or not sys.platform.startswith("linux"):
        return {}
    # fork: the workers start with this process's state (its imports, the registry, a test's
    # monkeypatching), so a worker renders exactly what this process would; on Linux only
    # (macOS's system libraries are not safe to fork, why Python spawns there, and spawned
    # workers would import everything again and miss that state)
    settings = (renderer.templates, renderer.format_code, renderer.formatter.settings())
    results: dict[str, _Result] = {}
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            # the biggest first: the versions of a package are rendered by one worker
            order = sorted(packages, key=len, reverse=True)
            futures = {pool.submit(_work, p, *settings): p[0].package for p in order}
            for future in as_completed(futures):
                try:
                    result = future.result()
                except Exception:  # not the package's error (the worker catches those): the
                    continue  # pool broke, or a value would not pickle; it renders serially
                if result is not None:
                    results[futures[future]] = result
                    _report(progress, result[1])
    except (OSError, BrokenProcessPool):
        pass  # no pool here (no /dev/shm, a process limit...): what is missing renders serially
    return results


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _work(
    specs: list[SpecVersion],
    templates: Path,
    format_code: bool,
    stores: tuple[Path | None, Path | None],
) -> _Result | None:
    """One package in a worker; None when it fails (the parent renders it again to raise)."""
    try:
        formatter = Formatter(*stores)
        renderer = Renderer(templates, format_code=format_code, formatter=formatter)
        files, timings = _render_package(specs, renderer)
        return files, timings, formatter.used, formatter.ran
    except Exception:
        return None


def _render_package(
    specs: list[SpecVersion], renderer: Renderer
) -> tuple[dict[str, str], _Timings]:
    """The files of the versions of one protocol package (`specs`, all of that package): its
    layout's back-end writes the codec modules, schemas and tests; the dialogue grammars and
    the package's docstring are every layout's."""
    files: dict[str, str] = {}
    plans: list[tuple[SpecVersion, ModulePlan]] = []
    versions: list[backends.Version] = []
    spent: dict[str, float] = {}  # per version: seconds planning and preparing it
    for spec in specs:
        start = time.monotonic()
        protocol, log = build_ir(spec)
        # every string the document gave is SpecText from here: templates must render it
        protocol = pytext.mark(protocol)
        plan = Planner(protocol).plan()
        verify(spec, protocol, log, plan)  # what the document declares, the package has
        plans.append((spec, plan))
        versions.append(backends.of(plans).prepare(spec, plan, renderer))
        for name, text in dialogue.emit(spec, protocol, renderer).items():
            files[f"{spec.package_path}/{name}"] = text  # its dialogue grammars, if any
        for name, text in rules.emit(spec, protocol, plan, renderer).items():
            files[f"{spec.package_path}/{name}"] = text  # the rules it states, as checks
        spent[spec.qualified] = time.monotonic() - start
    spec, plan = next(((s, p) for s, p in plans if s.latest), plans[-1])
    for other, other_plan in plans:
        if _wire(other_plan) != _wire(plan):
            raise PlanError(
                f"{other.document}: {other.qualified} frames differently from "
                f"{spec.qualified}; versions of one package share their framing"
            )
    start = time.monotonic()
    written = backends.of(plans).files(versions, renderer)
    took = (time.monotonic() - start) / len(specs)  # the package's share of each version
    timings: _Timings = []
    for folder, out in written:
        for name, text in out.items():
            files[f"{folder}/{name}"] = text
    for v in specs:
        own = sum(1 for path in files if path.startswith(f"{v.package_path}/"))
        timings.append((v.qualified, own, spent[v.qualified] + took))
    # the protocol's name (protocol.toml) is text like the spec's: escaped for the docstring
    files[f"{spec.package}/__init__.py"] = _PROTOCOL_DOC + pytext.doc(spec.protocol) + '."""\n'
    return files, timings


def _report(progress: Progress | None, timings: _Timings) -> None:
    if progress is not None:
        for name, files, took in timings:
            progress.line(f"{name} rendered, {files} files of its own ({took:.1f} s)")


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
        outdir.check(target, "generate", overwrite, beside=True)
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


def generate(
    target: Path | None = None,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
    cached: bool = True,
) -> dict[str, str]:
    """Every registered spec into `target` (default: the checkout's generated/), with the
    formatting manifest beside the files (`format_cache`)."""
    target = target or committed("generate", "rewrite; give SPEC --out DIR, or --out DIR alone")
    run = render(progress=progress, jobs=jobs, cached=cached)
    say_formatted(progress, run)
    write_tree({**run.files, MANIFEST: run.formatter.manifest_text()}, target)
    format_cache.prune(run.formatter.folder)
    return run.files


def stale(
    target: Path | None = None,
    progress: Progress | None = None,
    specs: list[SpecVersion] | None = None,
    *,
    jobs: int | None = None,
    cached: bool = True,
) -> list[str]:
    """Unified diffs between what the generator makes now (from `specs`, default every
    registered one) and what `target` (default: the checkout's generated/) holds. The manifest
    is not compared: it only makes a run faster (`format_cache`)."""
    default = target is None
    target = target or committed("check", "compare; run check in specgen's checkout")
    run = render(specs, progress=progress, jobs=jobs, cached=cached)
    say_formatted(progress, run)
    files = run.files
    # generated/ holds nothing else; a folder named with --out may keep other files beside
    ours = None if default or target == GENERATED else {rel.split("/")[0] for rel in files}
    label = "generated" if target == GENERATED else target.as_posix().rstrip("/")
    with tempfile.TemporaryDirectory(prefix="specgen-check-") as tmp:
        fresh = Path(tmp) / "generated"
        write_tree(files, fresh)
        return _diff_trees(fresh, target, label, ours)


def say_formatted(progress: Progress | None, run: Rendered) -> None:
    """A progress line: how many modules black formatted, how many came from a store."""
    if progress is not None:
        total = len(run.formatter.used)
        progress.line(
            f"black formatted {run.formatted} of {total} modules "
            "(the others came from generated/'s manifest or the format cache)"
        )


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
            and p.relative_to(root).as_posix() != MANIFEST
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
