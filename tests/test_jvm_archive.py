"""The driver JVM's class-data archive (specgen/pipeline/jvm_archive.py): written once, checked
before it is put in place, mapped by later sessions, and never the reason a session fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specgen.pipeline import jvm_archive

SESSION = (
    "from specgen.pipeline.spark import session; from specgen.pipeline import jvm_archive\n"
    "s = session('local[1]')\n"
    "plan = jvm_archive.LAST[-1]\n"
    "print(s.range(5).count(), 'mapped' if plan.archive and not plan.writes else 'plain')\n"
)


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "SPECGEN_JVM_ARCHIVE"}
    env["SPECGEN_CACHE_DIR"] = str(cache)
    return env


def test_a_live_holders_lock_is_respected_and_a_dead_ones_is_taken_over(tmp_path: Path) -> None:
    lock = tmp_path / "spark-k.lock"
    lock.write_text(str(os.getppid()))  # a live process: the one that runs this test
    assert not jvm_archive._take(lock)
    assert lock.read_text() == str(os.getppid())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    lock.write_text(dead.stdout.strip())
    left = tmp_path / f"spark-k.{dead.stdout.strip()}.partial"
    left.write_bytes(b"half an archive")
    assert jvm_archive._take(lock)
    assert lock.read_text() == str(os.getpid())
    assert not left.exists()  # what the dead writer left is never renamed into place


def test_a_command_never_writes_the_archive_and_maps_one_that_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("SPECGEN_JVM_ARCHIVE", raising=False)
    binary = Path(sys.executable).resolve()  # any binary: the key is its path and mtime
    monkeypatch.setattr(jvm_archive, "java", lambda: binary)
    made = jvm_archive.plan()
    assert made.options == [] and not made.writes
    assert not (tmp_path / "jvm").exists()  # no lock, no partial archive: nothing written
    there = tmp_path / "jvm" / f"spark-{jvm_archive.key(binary)}.jsa"
    there.parent.mkdir()
    there.write_bytes(b"an archive")
    made = jvm_archive.plan()
    assert made.options[0] == f"-XX:SharedArchiveFile={there}" and not made.writes
    assert "-Xlog:cds=off" in made.options
    monkeypatch.setenv("SPECGEN_JVM_ARCHIVE", "0")
    assert jvm_archive.plan().options == []  # turned off: not mapped either


def test_a_build_sweeps_the_archives_of_javas_and_sparks_no_longer_there(tmp_path: Path) -> None:
    java, jars = tmp_path / "java", tmp_path / "jars"
    java.write_bytes(b"")
    jars.mkdir()
    made_for = {
        "spark-live": {"java": str(java), "jars": str(jars)},
        "spark-venv-gone": {"java": str(java), "jars": str(tmp_path / "removed-venv" / "jars")},
        "spark-java-gone": {"java": str(tmp_path / "old-java"), "jars": str(jars)},
        "spark-kept": {"java": str(tmp_path / "old-java"), "jars": str(jars)},
    }
    for name, what in made_for.items():
        (tmp_path / f"{name}.jsa").write_bytes(b"archive")
        (tmp_path / f"{name}.json").write_text(json.dumps(what))
    (tmp_path / "spark-unknown.jsa").write_bytes(b"no json: not ours to judge")
    gone = jvm_archive._sweep(tmp_path, tmp_path / "spark-kept.jsa")
    assert sorted(p.name for p in gone) == ["spark-java-gone.jsa", "spark-venv-gone.jsa"]
    left = sorted(p.name for p in tmp_path.glob("spark-*"))
    assert left == [
        "spark-kept.jsa", "spark-kept.json", "spark-live.jsa", "spark-live.json",
        "spark-unknown.jsa",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real archive in a cache of this module's: the user's (what .ci/setup wrote) copied, or
    one written here by `python -m specgen.pipeline.warm_jvm`."""
    binary = jvm_archive.java()
    if binary is None:
        pytest.fail("no java: .ci/setup installs it")
    cache = tmp_path_factory.mktemp("cache")
    name = f"spark-{jvm_archive.key(binary)}.jsa"
    mine = jvm_archive.folder()
    if mine is not None and (mine / name).is_file():
        (cache / "jvm").mkdir()
        shutil.copyfile(mine / name, cache / "jvm" / name)
    else:
        done = subprocess.run(
            [sys.executable, "-m", "specgen.pipeline.warm_jvm"],
            env=_env(cache),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "bytes)" in done.stdout, done.stdout
    path = cache / "jvm" / name
    assert path.is_file()
    return path


@pytest.mark.spark
def test_only_a_whole_archive_is_sound(archive: Path, tmp_path: Path) -> None:
    binary = jvm_archive.java()
    assert binary is not None
    whole = tmp_path / "whole.partial"
    shutil.copyfile(archive, whole)
    assert jvm_archive._sound(binary, whole)
    cut = tmp_path / "cut.partial"
    with archive.open("rb") as src:
        cut.write_bytes(src.read(archive.stat().st_size // 2))
    # a JVM that maps it dies of SIGBUS: this archive would never be renamed into place
    assert not jvm_archive._sound(binary, cut)
    assert not list(tmp_path.glob("*.crash"))  # the crash report went with the check


@pytest.mark.spark
def test_a_session_maps_the_archive_and_starts_without_a_damaged_one(
    archive: Path, tmp_path: Path
) -> None:
    cache = archive.parent.parent
    run = subprocess.run(
        [sys.executable, "-c", SESSION],
        env=_env(cache),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "5 mapped"
    assert "cds" not in run.stdout  # the JVM's CDS warnings are off
    # damaged after it was checked: the session starts again without it, and it is gone
    damaged = tmp_path / "cache" / "jvm" / archive.name
    damaged.parent.mkdir(parents=True)
    with archive.open("rb") as src:
        damaged.write_bytes(src.read(archive.stat().st_size // 2))
    run = subprocess.run(
        [sys.executable, "-c", SESSION],
        env=_env(tmp_path / "cache"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "5 plain"
    assert not damaged.exists()
