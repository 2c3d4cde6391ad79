"""Installed use is as good as the checkout (issue 35, item 5).

- a bad `--out` (a file in its path, a folder that takes no files) is one line and exit 2
  before anything is rendered;
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specgen import capture, generate, outdir
from specgen.cli import main
from specgen.pipeline import decode
from specgen.specs import ROOT


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
