"""Installed use is as good as the checkout (issue 35, item 5).

- a copy of any shipped spec, generated from the user's folder, passes its own conformance
  tests (slow: every spec generated, then its tests in a child pytest);
- the wheel carries the formatting manifest, so generating a shipped spec from an installed
  specgen takes the installed codecs instead of running black (slow: a wheel and a venv);
- every path specgen prints is one the user can open from the folder they are in: spans of
  shipped specs in errors and lint lines name the real file, `specgen list` names each
  document; generated code still cites `specs/...`;
- a bad `--out` (a file in its path, a folder that takes no files) is one line and exit 2
  before anything is rendered.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# the install tests' helpers: the working tree's snapshot, its wheel, a fresh venv
from test_install import Venv, build_wheel, make_venv, take_snapshot
from test_install import run as run_in

from specgen import capture, generate, locations, outdir
from specgen.cli import main
from specgen.format_cache import MANIFEST
from specgen.frontends.adoc import SpecError
from specgen.pipeline import decode
from specgen.spans import SourceSpan
from specgen.specs import ROOT, registry


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err
    assert err.count("\n") == 1 and err.startswith("specgen: "), err
    return err.strip()


@pytest.fixture
def no_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendering fails the test: a bad --out must be found before it."""

    def render(*args: object, **kwargs: object) -> None:
        raise AssertionError("rendered before the --out check")

    monkeypatch.setattr(generate, "render", render)
    monkeypatch.setattr(generate, "render_all", render)


# ---- (d) --out is checked before any rendering ----------------------------------------------


@pytest.mark.parametrize("spec", [["rabbitmq-stream/4.0"], []], ids=["one spec", "every spec"])
@pytest.mark.parametrize("below", ["sub", "sub/deeper"])
def test_generate_out_under_a_file_is_refused_before_rendering(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    no_rendering: None,
    spec: list[str],
    below: str,
) -> None:
    (tmp_path / "FILE").write_text("mine\n")
    out = tmp_path / "FILE" / below
    assert main(["generate", *spec, "--out", str(out)]) == 2
    assert _one_line(capsys) == (
        f"specgen: {out}: cannot be made: {tmp_path / 'FILE'} is not a folder"
    )
    assert (tmp_path / "FILE").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["FILE"]  # no staging folder left


def test_generate_out_that_is_a_file_is_refused_before_rendering(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_rendering: None
) -> None:
    (tmp_path / "FILE").write_text("mine\n")
    argv = ["generate", "rabbitmq-stream/4.0", "--out", str(tmp_path / "FILE"), "--overwrite"]
    assert main(argv) == 2
    assert _one_line(capsys) == f"specgen: {tmp_path / 'FILE'}: exists and is not a folder"


def _refuse_writing(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """`folder` takes no files (os.access says so, as it would to anyone but root)."""
    real = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        if Path(str(path)).resolve() == folder.resolve() and mode & os.W_OK:
            return False
        return real(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(outdir.os, "access", access)


@pytest.mark.parametrize("where", ["parent", "nearest existing folder", "the folder itself"])
def test_generate_out_in_a_folder_that_takes_no_files_is_refused_before_rendering(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_rendering: None,
    where: str,
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    out = {
        "parent": locked / "gen",
        "nearest existing folder": locked / "a" / "b" / "gen",
        "the folder itself": locked,
    }[where]
    if where == "the folder itself":
        (locked / "old").mkdir()  # something generate wrote before: --overwrite replaces it
    _refuse_writing(monkeypatch, locked)
    argv = ["generate", "rabbitmq-stream/4.0", "--out", str(out), "--overwrite"]
    assert main(argv) == 2
    assert _one_line(capsys) == f"specgen: {out}: cannot write into {locked}: permission denied"


def test_generate_stages_beside_its_out_folder_so_the_parent_must_take_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """generate builds the tree next to --out and renames it in; decode and capture write
    inside their folder only, so an empty folder of theirs in a locked parent is fine."""
    out = tmp_path / "out"
    out.mkdir()
    _refuse_writing(monkeypatch, tmp_path)
    with pytest.raises(outdir.OutputError, match="permission denied"):
        outdir.check(out, "generate", False, beside=True)
    outdir.check(out, "decode", False)
    outdir.check(out, "capture", False)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_parent_is_refused_for_real(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_rendering: None
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert main(["generate", "rabbitmq-stream/4.0", "--out", str(locked / "gen")]) == 2
        assert "permission denied" in _one_line(capsys)
    finally:
        locked.chmod(0o700)


def test_decode_and_capture_refuse_an_out_under_a_file_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "FILE").write_text("x")
    out = tmp_path / "FILE" / "out"
    want = f"{out}: cannot be made: {tmp_path / 'FILE'} is not a folder"
    with pytest.raises(decode.DecodeInputError) as info:
        decode.check_out(out, False, ROOT / "samples" / "rabbitmq-stream")
    assert str(info.value) == want
    with pytest.raises(capture.CaptureError) as cap:
        capture.run(out, ("127.0.0.1", 1), ("127.0.0.1", 0), 0.2, None)
    assert str(cap.value) == want


# ---- (c) what is printed names files the user can open ------------------------------------

SPAN = re.compile(r"^(.+?):(\d+):(\d+): ")
PLACE = re.compile(r"([^\s():]+):(?=\d+:\d+)")  # the file of a file:line:column


def _lint(capsys: pytest.CaptureFixture[str], name: str) -> list[str]:
    assert main(["lint", name]) == 0
    return capsys.readouterr().out.splitlines()


def test_lint_from_the_checkout_root_reads_as_before(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    lines = _lint(capsys, "rabbitmq-stream/4.0")
    # the example of the README and docs/usage.md: relative to the root, as the spans name them
    assert lines[0].startswith("specs/rabbitmq-stream/PROTOCOL-4.0.adoc:55:1: example-key: ")
    assert any(line.startswith("specs/rabbitmq-stream/overlay.json:") for line in lines)


@pytest.mark.parametrize("name", ["rabbitmq-stream/4.0", "amqp-0-9-1/0-9-1", "amqp-1-0/1.0"])
def test_lint_from_another_folder_names_files_that_open_from_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.chdir(ROOT)
    at_root = _lint(capsys, name)
    monkeypatch.chdir(tmp_path)
    elsewhere = _lint(capsys, name)
    assert len(elsewhere) == len(at_root) > 1
    assert SPAN.match(elsewhere[0]) is not None
    for here, there in zip(at_root, elsewhere, strict=True):
        # every file:line:column names a file that opens from here (the line's own, and a
        # place in the spec a message cites); named as from the root, the lines are the same
        cited = [Path(m.group(1)) for m in PLACE.finditer(there)]
        assert all(path.is_file() for path in cited), there
        assert len(cited) == len(PLACE.findall(here))
        as_at_root = PLACE.sub(
            lambda m: f"{Path(m.group(1)).resolve().relative_to(ROOT.resolve())}:", there
        )
        assert as_at_root == here


def test_an_error_naming_a_shipped_spec_names_the_real_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    span = SourceSpan("specs/rabbitmq-stream/PROTOCOL-4.0.adoc", 12, 3)

    def broken(*args: object, **kwargs: object) -> None:
        raise SpecError(span, "the table ends early")

    monkeypatch.setattr("specgen.cli.build_ir", broken)
    monkeypatch.chdir(tmp_path)
    assert main(["ir", "rabbitmq-stream/4.0"]) == 2
    line = _one_line(capsys)
    found = re.fullmatch(r"specgen: (.+):12:3: the table ends early", line)
    assert found is not None, line
    assert Path(found.group(1)).resolve() == (ROOT / span.file).resolve()


def test_display_maps_only_shipped_spec_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shipped = "specs/amqp-0-9-1/amqp0-9-1.xml"
    real = locations.shown(ROOT / shipped)
    assert Path(real).resolve() == (ROOT / shipped).resolve()
    text = f"{shipped}:3:1: x; overlay {shipped}:4:2, see {shipped}."
    assert locations.display(text) == f"{real}:3:1: x; overlay {real}:4:2, see {real}."
    for same in (
        "HEAD:specs/amqp-0-9-1/amqp0-9-1.xml:3:1: a file at a git revision",
        "mine/specs/amqp-0-9-1/amqp0-9-1.xml:3:1: a path of the user's",
        "specs/no-such/PROTOCOL.adoc:1:1: no shipped file of that name",
        "the specs/ folder",
    ):
        assert locations.display(same) == same
    # a file of the user's own under the same name: that is the one the label names
    (tmp_path / "specs" / "amqp-0-9-1").mkdir(parents=True)
    (tmp_path / shipped).write_text("mine")
    assert locations.display(f"{shipped}:3:1: x") == f"{shipped}:3:1: x"


def test_shown_takes_the_shorter_of_relative_and_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert locations.shown(deep / "x.adoc") == "x.adoc"
    assert locations.shown(tmp_path / "y.adoc") == os.path.join("..", "..", "y.adoc")
    assert locations.shown(Path("/etc/z.xml")) == "/etc/z.xml"


@pytest.mark.parametrize("where", ["root", "elsewhere"])
def test_list_names_where_each_shipped_document_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(ROOT if where == "root" else tmp_path)
    assert main(["list"]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [row[0] for row in rows] == [s.qualified for s in registry()]
    for row, spec in zip(rows, registry(), strict=True):
        assert Path(row[2]).resolve() == spec.document.resolve(), row
    if where == "root":
        assert rows[0][2] == "specs/amqp-0-10/amqp.0-10.xml"


def test_generated_code_still_cites_specs_relative_to_the_root() -> None:
    # a module of the version's messages (the client's): a header, and classes citing the spec
    header = (ROOT / "generated" / "rabbitmq_stream" / "v4_0" / "client.py").read_text("utf-8")
    assert header.startswith(
        "# Generated by specgen 0.1.0 from specs/rabbitmq-stream/PROTOCOL-4.0.adoc, "
    )
    assert "Spec: specs/rabbitmq-stream/PROTOCOL-4.0.adoc:" in header


# ---- (a) a copy of any shipped spec passes its own conformance tests -----------------------


def test_a_copy_of_every_shipped_spec_passes_its_own_conformance_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user does it: the spec's folder copied (the documents of a multi-file spec stay
    together), `generate COPY --out DIR` from that folder, pytest on what it wrote. The copy is
    no registered spec: no version-scoped overlay entries, its own version name, and nothing
    shared with another version, so it lays out unlike the shipped package (4.0's Deliver
    structures take their owners' prefixes)."""
    outs = []
    for spec in registry():
        name = re.sub(r"\W", "_", spec.qualified)
        folder = tmp_path / name
        shutil.copytree(spec.document.parent, folder / "spec")
        monkeypatch.chdir(folder)
        # a .txt document does not say its format: the error asks for --protocol, so does this
        told = ["--protocol", spec.protocol] if spec.document.suffix == ".txt" else []
        out = f"out_{name}"  # one name per copy: one pytest run imports them all
        argv = ["generate", f"spec/{spec.document.name}", *told, "--out", out]
        assert main(argv) == 0, capsys.readouterr().err
        tests = sorted((folder / out).rglob("test_conformance.py"))
        assert tests, spec.qualified
        outs.append(folder / out)
    capsys.readouterr()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, outs)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.search(r"\d+ passed", run.stdout)


# ---- an installed wheel (slow: a build, a venv, a pip install) --------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """specgen from the wheel of the working tree, in a fresh venv."""
    src, _ = take_snapshot(tmp_path_factory.mktemp("src"))
    built = build_wheel(src, tmp_path_factory.mktemp("dist"))
    venv = make_venv(tmp_path_factory.mktemp("venv") / "v")
    run_in(venv.python, "-m", "pip", "install", "-q", built, cwd=venv.root)
    return venv


def _modules(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*.py")
        if "__pycache__" not in p.parts
    }


def test_the_wheel_carries_the_manifest_and_generate_takes_the_installed_codecs(
    wheel: Venv, tmp_path: Path
) -> None:
    """With an empty format cache, an installed `generate --out` runs black only on what no
    shipped module holds: nothing for every spec at once (the tree is the shipped one), and for
    a version alone the few modules that differ from the shipped package's (black's output goes
    into the user's cache, so what is left there counts the modules black formatted)."""
    installed = wheel.site / "specgen_codecs" / MANIFEST
    assert installed.read_bytes() == (ROOT / "generated" / MANIFEST).read_bytes()
    committed = _modules(ROOT / "generated")
    for spec, name in ((None, "every"), ("rabbitmq-stream/4.0", "one")):
        cache = tmp_path / f"cache-{name}"
        env = {**_clean_env(), "SPECGEN_CACHE_DIR": str(cache)}
        args = [str(wheel.specgen), "generate", *([spec] if spec else []), "--out", name]
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        written = _modules(tmp_path / name)
        unshipped = sorted(rel for rel, data in written.items() if committed.get(rel) != data)
        formatted = sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []
        if spec is None:
            assert written == committed and formatted == []
        else:
            # helpers of 4.0 alone, and its Arrow types, which the shipped package's two
            # versions share in shared_spark.py
            assert unshipped == [
                "rabbitmq_stream/records.py",
                "rabbitmq_stream/v4_0/spark_schema.py",
            ]
            assert len(formatted) == len(unshipped)


def _clean_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH")
    }


def test_installed_list_lint_and_errors_name_files_that_open(wheel: Venv, tmp_path: Path) -> None:
    shipped = wheel.site / "specgen" / "_data" / "specs"
    rows = [
        line.split("\t") for line in run_in(wheel.specgen, "list", cwd=tmp_path).stdout.splitlines()
    ]
    assert [row[0] for row in rows] == [s.qualified for s in registry()]
    for row, spec in zip(rows, registry(), strict=True):
        where = (tmp_path / row[2]).resolve()
        assert where == shipped / spec.document.relative_to(ROOT / "specs"), row
        assert where.is_file()
    lint = run_in(wheel.specgen, "lint", "amqp-0-9-1/0-9-1", cwd=tmp_path).stdout.splitlines()
    assert len(lint) > 1
    for line in lint[:-1]:
        for found in PLACE.finditer(line):
            path = (tmp_path / found.group(1)).resolve()
            assert path.is_relative_to(shipped) and path.is_file(), line
    # a bad --out: one line, exit 2, before any rendering
    (tmp_path / "FILE").write_text("x")
    bad = run_in(wheel.specgen, "generate", "--out", "FILE/sub", cwd=tmp_path, check=False)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "specgen: FILE/sub: cannot be made: FILE is not a folder\n"
