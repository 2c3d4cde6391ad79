"""The command line as a user meets it: errors that say what is wrong with a flag that exists,
help that documents every argument, one rule for output folders, and progress on stderr.

No Spark here (the decode and report progress lines are tested beside their jobs)."""

from __future__ import annotations

import argparse
import ast
import io
import re
from pathlib import Path

import pytest

from specgen import capture, outdir
from specgen.cli import main, parser
from specgen.pipeline import decode
from specgen.pipeline.spark import console_progress
from specgen.progress import Progress
from specgen.specs import ROOT, registry

SAMPLE = ROOT / "samples" / "rabbitmq-stream"


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("specgen: "), err
    return err.strip()


# ---- a missing file says so -----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["ir", "no/such/PROTOCOL.adoc"],
        ["lint", "./missing.xml"],
        ["diff", "rabbitmq-stream/4.0", "gone.adoc"],
        ["generate", "gone.adoc", "--out", "never-made"],
    ],
)
def test_a_missing_spec_file_is_no_such_file(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_line(capsys)
    missing = next(a for a in argv if a.endswith((".adoc", ".xml")))
    assert line == f"specgen: {missing}: no such file"
    assert not (tmp_path / "never-made").exists()


def test_an_unknown_name_lists_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", "rabbitmq-stream/9.9"]) == 2
    line = _one_line(capsys)
    assert line.startswith("specgen: unknown spec 'rabbitmq-stream/9.9' and no such file; known: ")
    assert all(s.qualified in line for s in registry())


def test_a_missing_overlay_or_page_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "errata.json"
    assert main(["ir", "rabbitmq-stream/early", "--overlay", str(missing)]) == 2
    assert _one_line(capsys) == f"specgen: {missing}: No such file or directory"
    page = tmp_path / "no" / "folder" / "review.html"
    argv = ["diff", "rabbitmq-stream/early", "rabbitmq-stream/early", "--html", str(page)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"specgen: {page}: No such file or directory\n"


# ---- every flag a message names exists ------------------------------------------------------


def _options() -> set[str]:
    found = set()
    for action in parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= {o for a in sub._actions for o in a.option_strings}
    return found


def _strings_in_specgen() -> list[tuple[str, str]]:
    """(where, text) of every string constant in specgen's code, f-strings' parts included."""
    out = []
    for path in sorted((ROOT / "specgen").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    return out


def test_every_flag_a_message_or_help_names_exists() -> None:
    options = _options()
    assert {"--out", "--overwrite", "--spec-format", "--protocol", "--port"} <= options
    named = [
        (where, flag)
        for where, text in _strings_in_specgen()
        if " " in text  # prose; a lone "--batch" is an argument to git, "--out" a declaration
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]", text)
    ]
    assert len(named) > 20  # the scan sees the messages
    unknown = [(where, flag) for where, flag in named if flag not in options]
    assert unknown == []


# ---- help -----------------------------------------------------------------------------------


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_argument_is_documented_with_a_capitalised_metavar() -> None:
    undocumented, styles = [], []
    for name, sub in _subcommands().items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            label = f"{name} {action.option_strings or action.dest}"
            if not action.help:
                undocumented.append(label)
            takes_value = action.nargs != 0 and action.choices is None
            if takes_value and not (action.metavar and re.fullmatch(r"[A-Z_:=]+", action.metavar)):
                styles.append(f"{label}: {action.metavar}")
    assert undocumented == []
    assert styles == []


def test_protocol_help_lists_every_name_frames_and_decode_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("frames", "decode"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for spec in registry():
            assert spec.qualified in text.replace("- ", "-")


def test_check_takes_what_generate_takes() -> None:
    subs = _subcommands()

    def inputs(name: str) -> set[str]:
        return {
            a.option_strings[0] if a.option_strings else a.dest
            for a in subs[name]._actions
            if not isinstance(a, argparse._HelpAction)
        }

    assert inputs("generate") - {"--overwrite"} == inputs("check")


# ---- one rule for output folders -------------------------------------------------------------


def test_the_rule_refuses_a_folder_with_files_unless_overwrite(tmp_path: Path) -> None:
    outdir.check(tmp_path / "new", "decode", overwrite=False)
    (tmp_path / "empty").mkdir()
    outdir.check(tmp_path / "empty", "decode", overwrite=False)
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(outdir.OutputError, match="not empty; specgen decode .*--overwrite"):
        outdir.check(tmp_path / "used", "decode", overwrite=False)
    outdir.check(tmp_path / "used", "decode", overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(outdir.OutputError, match="not a folder"):
        outdir.check(tmp_path / "file", "decode", overwrite=True)


def test_overwrite_removes_what_the_command_writes_and_keeps_the_rest(tmp_path: Path) -> None:
    for name in ("frames/part-0.parquet", "streams/s/conn.c2s.bin", "report.html", "notes.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("old")
    removed = outdir.clear(tmp_path, decode.WRITES, keep=tmp_path / "streams" / "s")
    assert removed == ["frames", "report.html"]  # streams/ holds the input: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "streams"]


def test_decode_overwrite_leaves_no_old_report_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.html").write_text("a page of the old tables")
    (out / "notes.txt").write_text("mine")
    with pytest.raises(decode.DecodeInputError, match="--overwrite"):
        decode.decode_local("rabbitmq-stream", SAMPLE, out, echo=lambda _: None)
    result = decode.decode_local(
        "rabbitmq-stream", SAMPLE, out, overwrite=True, echo=lambda _: None
    )
    assert result.reconciled
    assert sorted(p.name for p in out.iterdir()) == ["frames", "notes.txt", "rejects"]


def test_capture_overwrite_replaces_a_capture_and_keeps_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "cap"
    folder.mkdir()
    for name in ("capture.json", "conn-0001.c2s.bin", "conn-0001.index.jsonl", "notes.txt"):
        (folder / name).write_text("old")
    with pytest.raises(capture.CaptureError, match="--overwrite"):
        capture.run(folder, ("127.0.0.1", 1), ("127.0.0.1", 0), 0.2, None)
    capture.run(folder, ("127.0.0.1", 1), ("127.0.0.1", 0), 0.2, None, overwrite=True)
    assert sorted(p.name for p in folder.iterdir()) == ["capture.json", "notes.txt"]
    assert (folder / "capture.json").read_text() != "old"


def test_generate_out_follows_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gen"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = ["generate", "rabbitmq-stream/early", "--out", str(out)]
    assert main(argv) == 2
    assert "not empty; specgen generate writes into a new or empty folder" in _one_line(capsys)
    # a package an earlier generate wrote, of a spec not rendered this time
    (out / "old_protocol").mkdir()
    (out / "old_protocol" / "__init__.py").write_text('"""Generated codecs for old."""\n')
    assert main([*argv, "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "old_protocol").exists()
    assert (out / "rabbitmq_stream" / "early" / "commands.py").is_file()
    captured = capsys.readouterr()
    # progress: a whole line per spec on stderr, the result on stdout
    assert re.fullmatch(
        r"generate: rabbitmq-stream/early rendered, \d+ files of its own \(\d+\.\d s\)\n",
        captured.err,
    )
    assert captured.out.startswith("generated ")
    assert main(["check", "rabbitmq-stream/early", "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"{out} is up to date\n"
    (out / "rabbitmq_stream" / "errors.py").write_text("# hand edit\n")
    assert main(["check", "rabbitmq-stream/early", "--out", str(out)]) == 1
    assert "-# hand edit" in capsys.readouterr().out
    assert main(["check", "rabbitmq-stream/early"]) == 2
    assert "check SPEC needs --out DIR" in _one_line(capsys)


# ---- progress -------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_in_a_log_is_whole_lines_now_and_then() -> None:
    log = io.StringIO()
    progress = Progress("decode", log, interval=3600)
    progress.line("starting Spark")
    progress.update("1 of 9 ranges done")
    progress.update("2 of 9 ranges done")  # within the interval: not written
    progress.interval = 0
    progress.update("2 of 9 ranges done")
    progress.update("2 of 9 ranges done")  # no news: not written
    progress.done()
    progress.line("9 ranges decoded")
    assert log.getvalue() == (
        "decode: starting Spark\ndecode: 1 of 9 ranges done\ndecode: 2 of 9 ranges done\n"
        "decode: 9 ranges decoded\n"
    )


def test_progress_on_a_terminal_redraws_and_ends_its_line() -> None:
    tty = _Terminal()
    progress = Progress("report", tty)
    progress.update("1 of 2 tasks done")
    progress.update("2 of 2 tasks done")
    progress.line("Totals")
    assert tty.getvalue() == (
        "\r\x1b[Kreport: 1 of 2 tasks done\r\x1b[Kreport: 2 of 2 tasks done\nreport: Totals\n"
    )


def test_spark_console_bars_only_on_a_terminal() -> None:
    assert console_progress(io.StringIO()) == "false"
    assert console_progress(_Terminal()) == "true"


def test_diff_code_says_what_it_renders(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "rabbitmq-stream/early", "rabbitmq-stream/early", "--code"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert all(
        re.fullmatch(
            r"diff: code of specs/rabbitmq-stream/PROTOCOL-early\.adoc rendered "
            r"\(\d+\.\d s\)",
            line,
        )
        for line in err
    ), err
