"""specgen as a user gets it: built into a wheel (`python -m build`) and installed with
`pip install .`, each into a fresh venv, then used from a folder that is not the checkout; and
the pre-commit hooks run from another git repository.

Everything starts from a snapshot of the working tree (tracked and new files, as git would
commit them), so the tests see uncommitted work and never build inside the checkout. Builds, a
venv and pip installs take a minute or two: conftest marks this module slow (full layer only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from specgen.locations import CHECKOUT

assert CHECKOUT is not None, "the tests run from specgen's checkout"
ROOT = CHECKOUT

# Credit (key 0x0009, version 1): subscription 1, credit 10, as the 4.0 reference lays it out
# (`Credit => Key Version SubscriptionId Credit`, uint16 uint16 uint8 uint16) after the uint32 size
CREDIT = "000000070009000101000a"
ROUNDTRIP = f"""
import importlib, sys
codec = importlib.import_module(sys.argv[1])
frame = bytes.fromhex("{CREDIT}")
msg = codec.decode(frame, "client")
assert msg == codec.Credit(subscription_id=1, credit=10), msg
assert codec.encode(msg) == frame
print(type(msg).__module__)
"""


def _env() -> dict[str, str]:
    """The environment without what ties a process to the checkout or the test's venv."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH")
    }


def run(*cmd: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The working tree's files in a git repository of their own, and its one commit."""
    return take_snapshot(tmp_path_factory.mktemp("specgen-src"))


def take_snapshot(src: Path) -> tuple[Path, str]:
    """The working tree's files copied into the empty folder `src`, committed there."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in filter(None, (name.decode() for name in listed)):
        if (ROOT / rel).is_file():  # listed but deleted in the working tree: not copied
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    git = ("git", "-c", "user.name=specgen tests", "-c", "user.email=tests@specgen.invalid")
    run(*git, "init", "-q", cwd=src)
    run(*git, "add", "-A", cwd=src)
    run(*git, "commit", "-q", "-m", "snapshot", cwd=src)
    sha = run("git", "rev-parse", "HEAD", cwd=src).stdout.strip()
    return src, sha


@dataclass(frozen=True)
class Venv:
    root: Path
    site: Path

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def specgen(self) -> Path:
        return self.root / "bin" / "specgen"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """One fresh venv (no system site-packages) for both ways of installing."""
    return make_venv(tmp_path_factory.mktemp("venv") / "v")


def make_venv(root: Path) -> Venv:
    """A fresh venv at `root`, without system site-packages."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, env=_env())
    site = run(
        root / "bin" / "python",
        "-c",
        "import sysconfig; print(sysconfig.get_path('purelib'))",
        cwd=root,
    ).stdout.strip()
    return Venv(root, Path(site))


@pytest.fixture(scope="module", params=["wheel", "pip install ."])
def installed(
    request: pytest.FixtureRequest,
    venv: Venv,
    snapshot: tuple[Path, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Venv]:
    """specgen in `venv`: from the wheel `python -m build` makes of the snapshot (its sdist,
    then the wheel from that sdist), or by `pip install` of the snapshot's folder."""
    src, _ = snapshot
    run(venv.python, "-m", "pip", "uninstall", "-q", "-y", "specgen", cwd=venv.root)
    if request.param == "wheel":
        dist = tmp_path_factory.mktemp("dist")
        run(venv.python, "-m", "pip", "install", "-q", build_wheel(src, dist), cwd=venv.root)
    else:
        run(venv.python, "-m", "pip", "install", "-q", src, cwd=venv.root)
    yield venv


def build_wheel(src: Path, dist: Path) -> Path:
    """The wheel `python -m build` makes of the snapshot `src` (its sdist, then the wheel from
    that sdist), in `dist`."""
    run(sys.executable, "-m", "build", "--outdir", dist, src, cwd=src)
    (wheel,) = dist.glob("specgen-*.whl")
    return wheel


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A folder that is neither the checkout nor inside it."""
    folder = tmp_path / "work"
    folder.mkdir()
    assert ROOT not in folder.parents
    return folder


def _registered() -> list[str]:
    """`protocol/version` of every version the checkout's protocol.toml files register."""
    names = []
    for meta in sorted((ROOT / "specs").glob("*/protocol.toml")):
        data = tomllib.loads(meta.read_text(encoding="utf-8"))
        names += [f"{data['name']}/{v['name']}" for v in data["versions"]]
    return sorted(names)


def test_the_install_holds_specgen_and_specgen_codecs_and_no_generated(
    installed: Venv, elsewhere: Path
) -> None:
    assert (installed.site / "specgen" / "_data" / "grammars" / "adoc.lark").is_file()
    assert (installed.site / "specgen" / "_data" / "specs" / "rabbitmq-stream").is_dir()
    assert (installed.site / "specgen_codecs" / "py.typed").is_file()
    assert not (installed.site / "generated").exists()
    probe = run(installed.python, "-c", "import generated", cwd=elsewhere, check=False)
    assert probe.returncode == 1 and "No module named 'generated'" in probe.stderr
    where = run(
        installed.python,
        "-c",
        "import specgen.locations as l; print(l.CHECKOUT, l.DATA)",
        cwd=elsewhere,
    ).stdout.split()
    assert where == ["None", str(installed.site / "specgen" / "_data")]
    # the shipped codec, imported under its installed name, round-trips a frame from the spec
    out = run(
        installed.python, "-c", ROUNDTRIP, "specgen_codecs.rabbitmq_stream.v4_0", cwd=elsewhere
    )
    # Credit is defined in the module of what the client sends
    assert out.stdout.strip() == "specgen_codecs.rabbitmq_stream.v4_0.client"


def test_list_names_the_shipped_versions(installed: Venv, elsewhere: Path) -> None:
    rows = [
        line.split("\t")
        for line in run(installed.specgen, "list", cwd=elsewhere).stdout.splitlines()
    ]
    assert sorted(row[0] for row in rows) == _registered()
    assert all(row[1].startswith("specgen_codecs.") for row in rows), rows


def test_generate_one_spec_out_of_the_checkout(installed: Venv, elsewhere: Path) -> None:
    proc = run(installed.specgen, "generate", "rabbitmq-stream/4.0", "--out", "gen", cwd=elsewhere)
    assert proc.stdout.startswith("generated ") and "into gen " in proc.stdout
    # the installed generator writes what the checkout's writes for the same command, file for
    # file (one version alone is a package of its own: the Arrow types the committed package's
    # two versions share in shared_spark.py are in its spark_schema.py), and every codec module
    # as the checkout's committed one
    checkout = elsewhere / "gen-checkout"
    run(
        sys.executable,
        "-m",
        "specgen",
        "generate",
        "rabbitmq-stream/4.0",
        "--out",
        checkout,
        cwd=ROOT,
    )
    written = elsewhere / "gen"
    files = sorted(p.relative_to(checkout) for p in checkout.rglob("*.py"))
    assert sorted(p.relative_to(written) for p in written.rglob("*.py")) == files
    for name in files:
        assert (written / name).read_bytes() == (checkout / name).read_bytes(), name
    committed = ROOT / "generated" / "rabbitmq_stream" / "v4_0"
    version = written / "rabbitmq_stream" / "v4_0"
    assert sorted(p.name for p in version.iterdir()) == sorted(
        p.name for p in committed.iterdir() if p.suffix == ".py"
    )
    for path in committed.glob("*.py"):
        if path.name != "spark_schema.py":
            assert (version / path.name).read_bytes() == path.read_bytes(), path.name
    out = run(installed.python, "-c", ROUNDTRIP, "gen.rabbitmq_stream.v4_0", cwd=elsewhere)
    assert out.stdout.strip() == "gen.rabbitmq_stream.v4_0.client"


def test_lint_and_diff_say_what_they_say_in_the_checkout(installed: Venv, elsewhere: Path) -> None:
    diff = ("diff", "rabbitmq-stream/early", "rabbitmq-stream/4.0")
    there = run(installed.specgen, *diff, cwd=elsewhere)
    assert there.stdout == run(sys.executable, "-m", "specgen", *diff, cwd=ROOT).stdout
    lint = run(installed.specgen, "lint", "rabbitmq-stream/4.0", cwd=elsewhere).stdout
    here = run(sys.executable, "-m", "specgen", "lint", "rabbitmq-stream/4.0", cwd=ROOT).stdout
    # the same findings; where the checkout says specs/..., the installed specgen names the
    # file in site-packages, as it opens from the user's folder (the shorter of relative and
    # absolute)
    shipped = installed.site / "specgen" / "_data"
    first = lint.split(":", 1)[0]
    assert (elsewhere / first).resolve() == shipped / "specs/rabbitmq-stream/PROTOCOL-4.0.adoc"
    prefix = first.removesuffix("specs/rabbitmq-stream/PROTOCOL-4.0.adoc")
    assert prefix and lint.replace(prefix + "specs/", "specs/") == here


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_bare_generate_and_check_refuse_and_touch_nothing(installed: Venv, elsewhere: Path) -> None:
    (elsewhere / "notes.txt").write_text("mine\n", encoding="utf-8")
    before = _tree(installed.site), _tree(elsewhere)
    for command, says in (("generate", "give SPEC --out DIR"), ("check", "checkout")):
        proc = run(installed.specgen, command, cwd=elsewhere, check=False)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"specgen: {command}: "), lines
        assert "installed" in lines[0] and says in lines[0], lines
    assert (_tree(installed.site), _tree(elsewhere)) == before


# ---- the pre-commit hooks, run from another git repository -----------------------------------

HOOKS = """\
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: specgen-check
        args: [specs/PROTOCOL.adoc, --out, codecs]
      - id: specgen-diff
"""


def test_pre_commit_hooks_run_from_another_repository(
    snapshot: tuple[Path, str], tmp_path: Path
) -> None:
    src, sha = snapshot
    user = tmp_path / "user"
    (user / "specs").mkdir(parents=True)
    env_home = tmp_path / "pre-commit-home"
    git = ("git", "-c", "user.name=u", "-c", "user.email=u@specgen.invalid")

    def pre_commit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", *args],
            cwd=user,
            env={**_env(), "PRE_COMMIT_HOME": str(env_home)},
            capture_output=True,
            text=True,
            check=False,
        )

    run(*git, "init", "-q", cwd=user)
    (user / ".pre-commit-config.yaml").write_text(HOOKS.format(repo=src, rev=sha), "utf-8")
    early = ROOT / "specs" / "rabbitmq-stream" / "PROTOCOL-early.adoc"
    shutil.copy(early, user / "specs" / "PROTOCOL.adoc")
    run("git", "add", "-A", cwd=user)  # pre-commit wants its config staged; --all-files: tracked
    # the first run generates the codecs (new files: nothing tracked changed, so it passes)
    first = pre_commit("run", "--all-files")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (user / "codecs" / "rabbitmq_stream" / "protocol" / "commands.py").is_file()
    run(*git, "add", "-A", cwd=user)
    run(*git, "commit", "-q", "-m", "spec and codecs", cwd=user)

    clean = pre_commit("run", "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr

    # a hand edit to a committed codec: the hook rewrites it and fails
    commands = user / "codecs" / "rabbitmq_stream" / "protocol" / "commands.py"
    committed = commands.read_text(encoding="utf-8")
    commands.write_text(committed + "# edited by hand\n", encoding="utf-8")
    stale = pre_commit("run", "specgen-check", "--all-files")
    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "files were modified by this hook" in stale.stdout
    assert commands.read_text(encoding="utf-8") == committed

    # the 4.0 text staged over the early one renumbers what peers rely on: specgen-diff fails
    shutil.copy(
        ROOT / "specs" / "rabbitmq-stream" / "PROTOCOL-4.0.adoc", user / "specs" / "PROTOCOL.adoc"
    )
    run("git", "add", "specs/PROTOCOL.adoc", cwd=user)
    breaking = pre_commit("run", "specgen-diff")
    assert breaking.returncode == 1, breaking.stdout + breaking.stderr
    assert (
        "BREAKING:" in breaking.stdout
        and "specgen diff HEAD:specs/PROTOCOL.adoc" in breaking.stdout
    )
