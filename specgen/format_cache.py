"""black's output, remembered by content: running black is most of what `generate` costs.

black is a pure function of its version, its mode and the text it formats, so a formatted text
is found again by the key sha256(black's version, the mode, the unformatted text). Two stores
answer for a key before black runs:

* the manifest `generated/.format-manifest.json`, which `specgen generate` writes beside the
  codecs: for every key of its run, the sha256 of the formatted text it wrote. Each entry is a
  fact about black ("this text formats to bytes hashing to that"), true on any clone, so
  `specgen check` on a fresh clone renders the templates and takes a file of generated/ whose
  bytes hash as the manifest says, without running black. The wheel carries it beside the
  installed codecs (`specgen_codecs`, `locations.CODECS`), so an installed `generate --out`
  of a shipped spec takes the installed files the same way. A hand-edited or stale file hashes
  otherwise and is formatted afresh, so the check still finds it; a manifest that is missing,
  corrupt or written by another black (other keys) only costs the time of running black.
* a cache folder of the user's (`$SPECGEN_CACHE_DIR`, else `$XDG_CACHE_HOME/specgen/format`,
  else `~/.cache/specgen/format`), for `--out DIR` and for texts no manifest knows yet (a template
  being edited). Each entry starts with the sha256 of the text it holds, checked on every read:
  a damaged entry is ignored. Entries unused for `PRUNE_DAYS` days are removed.

Nothing here writes into an installed specgen, and any store that cannot be read or written is
skipped: a cache never changes what is written, only how long it takes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import black
import jinja2
from black.mode import Mode, TargetVersion
from jinja2.bccache import Bucket, BytecodeCache

BLACK_MODE = Mode(line_length=100, target_versions={TargetVersion.PY311})
MANIFEST = ".format-manifest.json"
"""The manifest's name in generated/ (`specgen check` compares every other file there)."""
PRUNE_DAYS = 30
_BLACK_VERSION: str = black.__version__  # type: ignore[attr-defined]
_FINGERPRINT = f"black {_BLACK_VERSION}; mode {BLACK_MODE.get_cache_key()}"


def digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def key(text: str) -> str:
    """What black makes of `text` depends on black's version, its mode and `text`, nothing else
    (the mode names its target version: black does not look at the running Python)."""
    return digest(f"{_FINGERPRINT}\0{text}")


def cache_folder() -> Path | None:
    """The user's format cache (see the module doc), or None without a home to put it in."""
    if os.environ.get("SPECGEN_CACHE_DIR"):
        return Path(os.environ["SPECGEN_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "specgen" / "format"
    try:
        return Path.home() / ".cache" / "specgen" / "format"
    except RuntimeError:  # no home directory
        return None


class Formatter:
    """black through the two stores. `used` maps every key formatted in this run to the hash of
    its output: the next manifest (workers of a process pool send theirs back to be merged)."""

    def __init__(self, tree: Path | None = None, folder: Path | None = None) -> None:
        self.tree = tree  # a generated/ with a manifest, read only
        self.folder = folder  # the user's cache, read and written
        self.used: dict[str, str] = {}
        self.ran = 0  # texts black formatted (no store knew them)
        self._manifest: dict[str, str] | None = None
        self._by_hash: dict[str, Path] | None = None

    @classmethod
    def default(cls, tree: Path | None, cached: bool = True) -> Formatter:
        """With `cached`, the manifest in `tree` (the checkout's generated/) and the user's cache;
        without, black for every text."""
        return cls(tree, cache_folder()) if cached else cls()

    def settings(self) -> tuple[Path | None, Path | None]:
        """What a worker process needs to build a Formatter of the same stores."""
        return self.tree, self.folder

    def format(self, text: str) -> str:
        k = key(text)
        out = self._committed(k)
        if out is None:
            out = self._cached(k)
        if out is None:
            out = black.format_str(text, mode=BLACK_MODE)
            self.ran += 1
            self._store(k, out)
        self.used[k] = digest(out)
        return out

    def manifest_text(self) -> str:
        """The manifest for what this run formatted (deterministic: sorted, one entry a line)."""
        return (
            json.dumps(
                {"black": _FINGERPRINT, "formatted": dict(sorted(self.used.items()))},
                indent=1,
                sort_keys=False,
            )
            + "\n"
        )

    # ---- the manifest beside a generated tree

    def _committed(self, k: str) -> str | None:
        if self.tree is None:
            return None
        if self._manifest is None:
            self._manifest = _read_manifest(self.tree / MANIFEST)
        expected = self._manifest.get(k)
        if expected is None:
            return None
        if self._by_hash is None:
            self._by_hash = _index(self.tree)
        path = self._by_hash.get(expected)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except OSError:
            return None
        if digest(data) != expected:  # changed since it was indexed
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    # ---- the user's cache folder

    def _cached(self, k: str) -> str | None:
        if self.folder is None:
            return None
        path = self.folder / k
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head, _, body = data.partition(b"\n")
        if head.decode("ascii", "replace") != digest(body):
            return None  # damaged: ignored, and overwritten when black has run
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return None
        try:
            os.utime(path)  # used: kept by the pruning
        except OSError:
            pass
        return text

    def _store(self, k: str, text: str) -> None:
        if self.folder is not None:
            _write(self.folder, k, text.encode("utf-8"))


class TemplateCache(BytecodeCache):
    """jinja's compiled templates in the user's cache (`jinja/` beside `format/`), so that
    neither a run nor each of its workers compiles every template again. jinja keys a template
    by its name and checks its source's hash; the folder is named by what else the compiled
    code depends on (jinja's and Python's versions, the environment's options), and every entry
    starts with the sha256 of the code it holds: a damaged one is compiled afresh."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def of(cls, formatter: Formatter, env: jinja2.Environment) -> TemplateCache | None:
        """The cache for `env`, when `formatter` has a cache folder."""
        if formatter.folder is None:
            return None
        options = repr(
            (
                env.block_start_string,
                env.block_end_string,
                env.variable_start_string,
                env.variable_end_string,
                env.comment_start_string,
                env.comment_end_string,
                env.line_statement_prefix,
                env.line_comment_prefix,
                env.trim_blocks,
                env.lstrip_blocks,
                env.newline_sequence,
                env.keep_trailing_newline,
                env.autoescape,
                env.optimized,
                env.is_async,
                sorted(env.extensions),
                env.undefined.__qualname__,
                # the compiled code calls finalize (the spec-text guard) only when there is one
                getattr(env.finalize, "__qualname__", None),
                # and passes a filter its environment or context when the filter asks for it
                sorted((n, str(getattr(f, "jinja_pass_arg", ""))) for n, f in env.filters.items()),
            )
        )
        tag = digest(f"jinja {jinja2.__version__}; python {sys.version}; {options}")[:24]
        return cls(formatter.folder.parent / "jinja" / tag)

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            data = (self.folder / bucket.key).read_bytes()
        except OSError:
            return
        head, _, body = data.partition(b"\n")
        if head.decode("ascii", "replace") != digest(body):
            return
        try:
            bucket.bytecode_from_string(body)
        except Exception:  # whatever jinja or marshal make of it: compiled afresh
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        _write(self.folder, bucket.key, bucket.bytecode_to_string())


def _write(folder: Path, name: str, body: bytes) -> None:
    """`body` under `name` in `folder`, after its sha256, atomically; nothing when it cannot."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(digest(body).encode("ascii") + b"\n" + body)
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only or full disk costs the cache only


def _read_manifest(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("black") != _FINGERPRINT:
        return {}
    entries = data.get("formatted")
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, str)}


def _index(tree: Path) -> dict[str, Path]:
    """Every file of `tree` by the hash of its bytes."""
    found: dict[str, Path] = {}
    try:
        paths = sorted(p for p in tree.rglob("*.py") if "__pycache__" not in p.parts)
    except OSError:
        return found
    for p in paths:
        try:
            found.setdefault(digest(p.read_bytes()), p)
        except OSError:
            continue
    return found


def prune(folder: Path | None, days: float = PRUNE_DAYS) -> None:
    """Remove the cache entries (and stray temporary files) unused for `days` days, in `folder`
    and in the compiled templates' folders beside it (those are not touched when used: one
    compiled a month ago is compiled again)."""
    if folder is None:
        return
    cutoff = time.time() - days * 86400
    try:
        folders = [folder, *(p for p in (folder.parent / "jinja").iterdir() if p.is_dir())]
    except OSError:
        folders = [folder]
    for where in folders:
        try:
            entries = list(where.iterdir())
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    entry.unlink()
            except OSError:
                continue
