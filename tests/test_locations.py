"""How specgen tells its checkout from an install (tests/test_install.py covers the install)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from specgen import locations

ROOT = Path(__file__).resolve().parents[1]


def test_the_checkout_is_the_folder_above_the_package() -> None:
    assert locations.CHECKOUT == ROOT
    assert locations.DATA == ROOT  # grammars, templates and specs read in place
    assert (locations.GRAMMARS / "adoc.lark").is_file()


def test_a_checkout_needs_specgen_s_pyproject_and_generated(tmp_path: Path) -> None:
    package = tmp_path / "specgen"
    package.mkdir()
    assert locations._checkout(package) is None  # nothing beside it
    (tmp_path / "generated").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n', encoding="utf-8")
    assert locations._checkout(package) is None  # another project's
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "specgen"\n', encoding="utf-8")
    assert locations._checkout(package) == tmp_path
    (tmp_path / "generated").rmdir()
    assert locations._checkout(package) is None


def test_specgen_codecs_is_this_checkout_s_even_with_another_on_the_path(tmp_path: Path) -> None:
    """An editable install of another checkout (here: a decoy package on the path) does not
    hand its codecs to this checkout's specgen."""
    decoy = tmp_path / "specgen_codecs"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("", encoding="utf-8")
    probe = "import specgen.locations, specgen_codecs; print(specgen_codecs.__file__)"
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(tmp_path)))},
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip() == str(ROOT / "generated" / "__init__.py")
