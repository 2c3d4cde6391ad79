"""Which spec a command-line argument means: a registered name, any spec file, or `REV:PATH`.

`rabbitmq-stream/4.0` and `rabbitmq-stream` name registered versions (`specs/*/protocol.toml`).
A path names a file: the registered version when it is one of ours, otherwise a new
`SpecVersion` whose protocol and format come from the flags, the registry (a protocol whose
title the document carries) or the file's content. `REV:PATH` is a file as git holds it at a
revision (`main:specs/x.adoc`, `HEAD~3:PROTOCOL.adoc`), read with `git show`, no checkout.

A document that is not registered gets no version-scoped overlay entries (they were written for
the registered documents' text); `--overlay FILE` gives it errata of its own. It takes its
protocol's data (protocol.toml's `[data]`, what the documents do not say), except that a file of
the same name beside it is its own, and `--data NAME=FILE` overrides either.

Its format: `--spec-format`; else the one format `--protocol`'s documents have; else the file's
suffix (`.adoc`); else, for XML, what the document holds (XML_FAMILIES): classes with methods are
the class-and-method XML (0-8, 0-9, 0-9-1), controls and commands 0-10's, descriptors, encodings
and sections 1.0's. Never the version numbers: an unknown version of a known format reads.
"""

from __future__ import annotations

import atexit
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from specgen.frontends import FRONTENDS, xml_tree
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.spec_text import not_utf8
from specgen.registry import ROOT, SpecVersion, find, registry, relative

# .xml is told by content: AMQP 0-9-1's and AMQP 1.0's XML are different formats
FORMATS_BY_SUFFIX = {".adoc": "adoc", ".asciidoc": "adoc"}


class SourceError(LookupError):
    """A spec argument names nothing readable: no such file, revision or protocol."""


_TEMP: list[Path] = []


def _scratch() -> Path:
    if not _TEMP:
        _TEMP.append(Path(tempfile.mkdtemp(prefix="specgen-rev-")))
        atexit.register(shutil.rmtree, _TEMP[0], True)
    return _TEMP[0]


def resolve(
    arg: str,
    *,
    protocol: str | None = None,
    format: str | None = None,
    overlay: Path | None = None,
    data: Mapping[str, Path] | None = None,
) -> SpecVersion:
    """The SpecVersion `arg` names (see the module doc); `data` overrides its data files."""
    return _with_data(_resolve(arg, protocol, format, overlay), data or {})


def _resolve(
    arg: str, protocol: str | None, format: str | None, overlay: Path | None
) -> SpecVersion:
    path = Path(arg)
    if not path.exists():
        try:
            spec = find(arg)
        except LookupError:
            if _is_rev_path(arg):
                return _from_git(arg, protocol, format, overlay)
            if _is_path(arg):
                raise SourceError(f"{arg}: no such file") from None
            known = ", ".join(s.qualified for s in registry()) or "none"
            raise SourceError(f"unknown spec {arg!r} and no such file; known: {known}") from None
        return spec if overlay is None else replace(spec, overlay=overlay)
    for spec in registry():
        if spec.document.resolve() == path.resolve() and protocol in (None, spec.protocol):
            return spec if overlay is None else replace(spec, overlay=overlay)
    return _unregistered(path, path.stem, "", protocol, format, overlay)


def _with_data(spec: SpecVersion, given: Mapping[str, Path]) -> SpecVersion:
    shipped = dict(spec.data)
    for name, path in given.items():
        if name not in shipped:
            takes = ", ".join(shipped) or "none"
            raise SourceError(
                f"--data {name}=...: {spec.protocol} takes no {name!r} (it takes: {takes})"
            )
        if not path.is_file():
            raise SourceError(f"--data {name}={path}: no such file")
        shipped[name] = path
    return replace(spec, data=tuple(shipped.items())) if given else spec


# suffixes of spec documents: a name with one is a file, never a registered spec's name
DOCUMENT_SUFFIXES = (".adoc", ".asciidoc", ".xml", ".txt", ".md", ".html", ".rst")


def _is_path(arg: str) -> bool:
    """Whether `arg` can only mean a file: a document's suffix, a path from here or the root,
    or a folder that is no registered protocol (`rabbitmq-stream/4.0` names a version)."""
    path = Path(arg)
    if path.suffix.lower() in DOCUMENT_SUFFIXES or arg.startswith(("/", "./", "../", "~")):
        return True
    protocols = {s.protocol for s in registry()} | {s.package for s in registry()}
    return len(path.parts) > 1 and path.parts[0] not in protocols


def _is_rev_path(arg: str) -> bool:
    # a Windows drive letter is not a revision; a revision has no spaces
    rev, sep, rest = arg.partition(":")
    return bool(sep and rest and rev and len(rev) > 1 and " " not in rev)


def _from_git(
    arg: str, protocol: str | None, format: str | None, overlay: Path | None
) -> SpecVersion:
    rev, _, rel = arg.partition(":")
    # `REV:./PATH` makes git resolve PATH against the current directory, as a user expects
    spec_path = rel if rel.startswith(("./", "../")) else f"./{rel}"
    try:
        proc = subprocess.run(
            ["git", "show", f"{rev}:{spec_path}"], capture_output=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SourceError(f"{arg}: cannot run git: {e}") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        raise SourceError(f"{arg}: {detail[-1] if detail else 'git show failed'}")
    # one folder per revision and spec folder: the document's companions (field-types.toml,
    # the parts an index names, 0-10's text beside its XML) come from the same revision
    folder = _scratch() / _safe(rev) / _safe(str(Path(rel).parent))
    folder.mkdir(parents=True, exist_ok=True)
    _siblings_at(rev, spec_path, folder)
    target = folder / Path(rel).name
    target.write_bytes(proc.stdout)
    registered = _registered_at(rel, protocol)
    if registered is not None:
        # an older text of one of our documents: it keeps its name and takes its errata as
        # they were at the same revision
        overlay_label = ""
        if overlay is None and registered.overlay is not None:
            overlay = _file_at(rev, registered.overlay, folder)
            overlay_label = f"{rev}:{relative(registered.overlay)}"
        data = tuple((n, _file_at(rev, p, folder) or p) for n, p in registered.data)
        return replace(
            registered,
            document=target,
            label=arg,
            overlay=overlay,
            overlay_label=overlay_label,
            data=data,
        )
    return _unregistered(target, f"{Path(rel).stem}@{rev}", arg, protocol, format, overlay)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def _siblings_at(rev: str, spec_path: str, folder: Path) -> None:
    """The files beside `spec_path` at `rev`, copied into `folder` (one `git cat-file` for all);
    nothing when git cannot list them (the document itself is then still read)."""
    listing = subprocess.run(
        ["git", "ls-tree", "-z", rev, "--", f"{Path(spec_path).parent.as_posix()}/"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    blobs: list[tuple[bytes, str]] = []
    for entry in listing.stdout.split(b"\0") if listing.returncode == 0 else []:
        meta, _, path = entry.partition(b"\t")
        if meta.split(b" ")[1:2] == [b"blob"]:
            blobs.append((meta.split(b" ")[2], Path(path.decode(errors="replace")).name))
    if not blobs:
        return
    batch = subprocess.run(
        ["git", "cat-file", "--batch"],
        input=b"".join(oid + b"\n" for oid, _ in blobs),
        capture_output=True,
        check=False,
        timeout=60,
    )
    data, at = batch.stdout, 0
    for _, name in blobs:  # each answer: "<oid> blob <size>\n<bytes>\n"
        header_end = data.find(b"\n", at)
        if header_end < 0:
            return
        size = int(data[at:header_end].split(b" ")[2])
        (folder / name).write_bytes(data[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1


def _file_at(rev: str, ours: Path, folder: Path) -> Path | None:
    """One of our files (an overlay, a data file) as it was at `rev`, if it existed then."""
    proc = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{relative(ours)}"],
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        return None  # the revision had no such file
    target = folder / ours.name
    target.write_bytes(proc.stdout)
    return target


def _registered_at(rel: str, protocol: str | None) -> SpecVersion | None:
    here = (Path.cwd() / rel).resolve()
    for spec in registry():
        if spec.document.resolve() == here and protocol in (None, spec.protocol):
            return spec
    return None


def _unregistered(
    path: Path,
    version: str,
    label: str,
    protocol: str | None,
    format: str | None,
    overlay: Path | None,
) -> SpecVersion:
    # only read for its format and title here (bytes that are not UTF-8 are the front-end's to
    # report, at their line)
    text = path.read_text(encoding="utf-8", errors="replace")
    known = [s for s in registry() if s.latest]
    if protocol is not None:
        matches = [s for s in known if protocol in (s.protocol, s.package)]
        if not matches:
            names = ", ".join(s.protocol for s in known)
            raise SourceError(f"unknown protocol {protocol!r} (--protocol); known: {names}")
        formats = sorted({s.format for s in registry() if s.protocol == matches[0].protocol})
        fmt = format or (formats[0] if len(formats) == 1 else _detect(path, text, label))
        if fmt not in formats and format is None:
            raise SourceError(
                f"{label or path}: a {fmt} document, but {matches[0].protocol} is read from "
                f"{', '.join(formats)}; give --spec-format to insist"
            )
    else:
        fmt = format or _detect(path, text, label)
        matches = [s for s in known if s.format == fmt]
        if len(matches) > 1:
            titled = [s for s in matches if s.title and _mentions(text, s)]
            matches = titled or matches
        if len(matches) != 1:
            _refuse_if_not_utf8(path, label)
            names = ", ".join(s.protocol for s in matches) or "none"
            raise SourceError(
                f"{label or path}: cannot tell which protocol this {fmt} document is "
                f"(candidates: {names}); give --protocol"
            )
    base = matches[0]
    return SpecVersion(
        protocol=base.protocol,
        package=base.package,
        version=version,
        module=module_name(version),
        document=path,
        format=fmt,
        overlay=overlay if overlay is not None else base.overlay,
        latest=False,
        title=base.title,
        ports=base.ports,  # the protocol's servers listen where they do for any copy
        label=label,
        data=tuple((name, _beside(path, shipped)) for name, shipped in base.data),
    )


def _beside(document: Path, shipped: Path) -> Path:
    """A data file of the shipped one's name beside the document is the document's own."""
    own = document.parent / shipped.name
    return own if own.is_file() else shipped


def _detect(path: Path, text: str, label: str) -> str:
    try:
        return _format_of(path, text, label or relative(path))
    except (SourceError, SpecSyntaxError):
        _refuse_if_not_utf8(path, label)  # often the reason the content tells nothing
        raise


def _refuse_if_not_utf8(path: Path, label: str) -> None:
    """When the content told nothing, a document that is not UTF-8 is refused for that first
    (often the reason), as its front-end would: at the first bad byte, naming the file as spans
    do."""
    error = not_utf8(path.read_bytes(), label or relative(path))
    if error is not None:
        raise error from None  # no SourceError being handled rides along


def _mentions(text: str, spec: SpecVersion) -> bool:
    head = text[:4000].lower()
    words = [w for w in re.split(r"\W+", spec.title.lower()) if len(w) > 2]
    return bool(words) and all(w.rstrip("s") in head for w in words)


def _format_of(path: Path, text: str, name: str) -> str:
    if path.suffix.lower() in FORMATS_BY_SUFFIX:
        return FORMATS_BY_SUFFIX[path.suffix.lower()]
    body = text.removeprefix("\ufeff").lstrip()
    if body.startswith("<"):
        # XML: the root element decides, however long the comments before it
        root = xml_tree.root_start(text, name)
        fmt = _xml_format(root, text)
        if fmt is None and root.tag.rsplit(":", 1)[-1] != "amqp":
            raise SourceError(
                f"{root.span}: the root element is <{root.tag}>, which no front-end reads "
                f"(AMQP's XML has <amqp>); give --spec-format ({', '.join(sorted(FRONTENDS))})"
            )
        if fmt is None:
            kinds = "; ".join(what for _, _, what in XML_FAMILIES)
            raise SourceError(
                f"{root.span}: an <amqp> document that holds none of: {kinds} -> give "
                f"--spec-format ({', '.join(sorted(FRONTENDS))})"
            )
        return fmt
    if re.match(r"=+ \S", body):
        return "adoc"
    raise SourceError(
        f"{path}: cannot tell the spec format from its name or content; give --spec-format "
        f"({', '.join(sorted(FRONTENDS))}) or --protocol"
    )


# What each XML family's documents hold, by element: told by structure, never by the version
# an <amqp> root claims (a 0-10-schema document of another number is still 0-10's)
XML_FAMILIES = (
    ("amqp-xml", frozenset({"method"}), "classes with methods (AMQP 0-8 to 0-9-1)"),
    (
        "amqp010-xml",
        frozenset({"control", "command", "segments"}),
        "controls and commands (AMQP 0-10)",
    ),
    (
        "amqp10-xml",
        frozenset({"descriptor", "encoding", "section"}),
        "types with descriptors and encodings in sections (AMQP 1.0)",
    ),
)


def _xml_format(root: xml_tree.Element, text: str) -> str | None:
    """AMQP's XML families, told apart by the elements the document holds (XML_FAMILIES); an
    AMQP 1.0 index holds only cross-references to its parts. None when nothing tells, a
    SourceError when two families' elements are there."""
    if root.tag.rsplit(":", 1)[-1] != "amqp":
        return None
    body = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    tags = {t.rsplit(":", 1)[-1] for t in re.findall(r"<([A-Za-z][\w:.-]*)", body)}
    found = [(fmt, what) for fmt, marks, what in XML_FAMILIES if tags & marks]
    if len(found) == 1:
        return found[0][0]
    if len(found) > 1:
        both = " and ".join(f"{what} ({fmt})" for fmt, what in found)
        raise SourceError(
            f"{root.span}: the document holds {both} -> give --spec-format to say which it is"
        )
    if "xref" in tags and root.attr("name") is not None:
        return "amqp10-xml"  # an index: its parts hold the types
    return None


def module_name(version: str) -> str:
    """A Python module name for a version label: `2021-02-26_768a61792e` -> `v2021_02_26_768a61792e`."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", version).strip("_").lower()
    return name if name[:1].isalpha() else f"v{name}"
