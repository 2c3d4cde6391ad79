"""Where specgen's own files are: the grammars, templates and shipped specs it reads, and the
checkout whose `generated/` a bare `specgen generate` and `specgen check` work on.

Installed (`pip install .` or a wheel), the files are package data under `specgen/_data/`
(setup.py maps the repository's top-level `grammars/`, `templates/` and `specs/` there), found
through `importlib.resources`. Run from a checkout (an editable install, or the checkout on
PYTHONPATH), they are the checkout's own folders, so an edit shows at once. A checkout is the
folder above this package when it holds specgen's pyproject.toml and a `generated/` folder;
an installed specgen has no checkout and writes codecs only where `--out` says.

The shipped codecs travel with their formatting manifest (`generated/.format-manifest.json`,
package data of `specgen_codecs` when installed): `CODECS` is where both are.

In a checkout, `specgen_codecs` is that checkout's `generated/`, also when the checkout runs
through PYTHONPATH beside an editable install of another checkout (whose import hook would
otherwise hand out the other checkout's codecs).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path


def _package() -> Path:
    files = importlib.resources.files("specgen")
    if not isinstance(files, Path):  # a zipped install: lark and jinja2 read real files
        raise ImportError(f"specgen must be installed as files, not in an archive: {files}")
    return files


def _checkout(package: Path) -> Path | None:
    root = package.parent
    try:
        meta = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    if meta.get("project", {}).get("name") != "specgen" or not (root / "generated").is_dir():
        return None
    return root


def _codecs_of(checkout: Path) -> None:
    if "specgen_codecs" in sys.modules:  # imported before specgen: left as the importer found it
        return
    folder = checkout / "generated"
    spec = importlib.util.spec_from_file_location(
        "specgen_codecs", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["specgen_codecs"] = module
    spec.loader.exec_module(module)


PACKAGE = _package()
CHECKOUT = _checkout(PACKAGE)
if CHECKOUT is not None:
    _codecs_of(CHECKOUT)
"""The repository specgen runs from, or None when it is installed."""
DATA = CHECKOUT or PACKAGE / "_data"
"""The folder holding grammars/, templates/ and specs/; spans name spec files relative to it,
so generated headers read the same installed or not (`Spec: specs/...`). What is printed to the
user names the real file instead: `shown` and `display`."""
GRAMMARS = DATA / "grammars"
TEMPLATES = DATA / "templates"
SPECS = DATA / "specs"
CODECS = CHECKOUT / "generated" if CHECKOUT is not None else PACKAGE.parent / "specgen_codecs"
"""The shipped codecs as files: the checkout's generated/, or the `specgen_codecs` the same
wheel installed beside this package. Their formatting manifest (`format_cache`) lets a
generate whose output is theirs take them instead of running black, installed or not."""


def shown(path: Path) -> str:
    """`path` as the user can open it from the working folder: relative to it when that is
    shorter, else absolute (a shipped spec of an installed specgen is in site-packages)."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return str(absolute)
    return relative if len(relative) <= len(str(absolute)) else str(absolute)


# a spec file as spans name it (`specs/...`, relative to DATA): not inside another path or
# after a revision (`HEAD:specs/x.adoc` is git's), ending before `:line:column` or punctuation
_SPAN_FILE = re.compile(r"(?<![\w./:~-])specs/[\w.@+/-]*\w")


def display(text: str) -> str:
    """`text` (an error, a lint line) with every shipped spec file it names by its span label
    (`specs/rabbitmq-stream/PROTOCOL-4.0.adoc:55:1`) named so that the user can open it from
    the working folder (`shown`). A label that names a file from the working folder already (the
    checkout's root, or a file of the user's own) stays as it is; so does generated code, which
    cites `specs/...` and never passes through here."""

    def real(found: re.Match[str]) -> str:
        label = found.group(0)
        if os.path.exists(label) or not (DATA / label).is_file():
            return label
        return shown(DATA / label)

    return _SPAN_FILE.sub(real, text)
