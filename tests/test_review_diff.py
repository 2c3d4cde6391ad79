"""`specgen diff` against the real history of the Streams reference.

The expectations come from the corpus's `changelog.md`, written from the git history by reading
each version's text, not from this code: its [layout] / [names] / [prose] tag for every version,
and the facts it records (which keys moved, which fields changed width, which commands came).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from corpus import MISSING, index, streams_corpus

from specgen.cli import main
from specgen.ir import Protocol
from specgen.review.changes import NEW_CLIENT, OLD_CLIENT, Review, compare
from specgen.sources import resolve
from specgen.specs import build_ir

CORPUS = streams_corpus()
pytestmark = pytest.mark.skipif(CORPUS is None, reason=MISSING)


@functools.cache
def _main_line() -> list[dict[str, str]]:
    assert CORPUS is not None
    return index(CORPUS / "index.tsv")


def _file(seq: int) -> Path:
    assert CORPUS is not None
    return CORPUS / _main_line()[seq - 1]["file"]


@functools.cache
def _ir(seq: int) -> Protocol:
    protocol, _ = build_ir(resolve(str(_file(seq))))
    return protocol


@functools.cache
def _review(seq: int) -> Review:
    """The change that made version `seq`, against the version before it."""
    return compare(_ir(seq - 1), _ir(seq), f"seq {seq - 1}", f"seq {seq}")


@functools.cache
def _tags() -> dict[int, str]:
    """seq -> layout | names | prose, as changelog.md tags each main-line version."""
    assert CORPUS is not None
    text = (CORPUS / "changelog.md").read_text(encoding="utf-8")
    main_line = text.split("## Branch-only versions")[0]
    found = re.findall(
        r"^(\d+)\. \*\*[0-9-]+ [0-9a-f]+\*\* \[(layout|names|prose)\]", main_line, re.M
    )
    return {int(seq): tag for seq, tag in found}


# Where the diff and the changelog's tag part ways, and why the diff is right.
TAG_EXCEPTIONS = {
    27: "tagged prose because no table value changed, but the new paragraph gives every "
    "response key the most significant bit: the frame's response flag appears (a wire change)",
    58: "tagged layout because UnsubscribeResponse gets its own section, but the commands table "
    "already promised a response and the frame structure's generic Response has the same bytes",
}


def test_the_changelog_tags_every_main_line_version() -> None:
    assert sorted(_tags()) == list(range(2, len(_main_line()) + 1))


@pytest.mark.parametrize("seq", range(2, 69))
def test_each_change_is_classified_as_the_changelog_tags_it(seq: int) -> None:
    tag = _tags()[seq]
    review = _review(seq)
    wire, names = review.of("wire"), review.of("names")
    if seq in TAG_EXCEPTIONS:
        return  # what the diff says instead is asserted in the next test
    if tag == "prose":
        assert not wire and not names, [c.summary for c in wire + names]
    elif tag == "names":
        assert not wire, [c.summary for c in wire]
    else:
        assert wire or names, "a [layout] version with no change on the wire"


def test_the_exceptions_are_what_the_changelog_says() -> None:
    flag = [c for c in _review(27).of("wire") if c.rule == "FRAME_RESPONSE_FLAG"]
    assert [c.summary for c in flag] == ["response flag none -> 0x8000"]
    assert flag[0].breaking
    unsubscribe = _ir(58).command("Unsubscribe").message("response")
    assert unsubscribe is not None and unsubscribe.name == "UnsubscribeResponse"
    assert not _review(58).of("wire")


def _rules(review: Review, rule: str) -> list[str]:
    return [c.where for c in review.changes if c.rule == rule]


def test_start_constants_at_1_renumbers_every_key_and_is_breaking() -> None:
    """Seq 28 (2021-02-26 9f0bec8def): every key +1, every response code +1, OffsetType +1."""
    review = _review(28)
    old, new = _ir(27), _ir(28)
    rekeyed = {c.command for c in review.changes if c.rule == "COMMAND_REKEYED"}
    assert rekeyed == {c.name for c in new.commands} == {c.name for c in old.commands}
    for command in new.commands:
        assert command.ident[0] == old.command(command.name).ident[0] + 1
    renumbered = {c.where: c for c in review.changes if c.rule == "ENUM_VALUE_RENUMBERED"}
    assert set(renumbered) == {"enum ResponseCode", "enum OffsetType"}
    assert "moved by +1" in renumbered["enum ResponseCode"].summary
    assert all(set(c.breaks) == {OLD_CLIENT, NEW_CLIENT} for c in renumbered.values())
    assert len(review.breaking) >= len(rekeyed) + 2


def test_the_first_renumbering_is_breaking_too() -> None:
    """Seq 21: all 23 keys renumbered, the table reordered."""
    review = _review(21)
    assert len(_rules(review, "COMMAND_REKEYED")) == 23
    subscribe = _ir(21).command("Subscribe")
    assert subscribe.ident == (6,)


def test_signed_to_unsigned_keeps_the_bytes() -> None:
    """Seq 29: same widths, signedness only: compatible, and said per field."""
    review = _review(29)
    assert review.of("wire") and not review.breaking
    assert {c.rule for c in review.of("wire")} <= {
        "FIELD_SIGNEDNESS",
        "FRAME_FIELD_SIGNEDNESS",
        "TYPE_SIGNEDNESS",
    }
    frame = {c.where for c in review.changes if c.rule == "FRAME_FIELD_SIGNEDNESS"}
    assert frame == {"frame / Size", "frame / Key", "frame / Version"}


def test_sub_id_to_byte_narrows_five_fields() -> None:
    """Seq 13: SubscriptionId int32 -> int8 in Subscribe, Deliver, Credit, CreditResponse,
    Unsubscribe."""
    review = _review(13)
    narrowed = {
        (c.command, c.new_path)
        for c in review.changes
        if c.rule == "FIELD_WIDTH" and "narrowed" in c.summary
    }
    assert {cmd for cmd, _ in narrowed} == {"Subscribe", "Deliver", "Credit", "Unsubscribe"}
    assert len(narrowed) == 4 or len(review.breaking) == 5
    credit = [c for c in review.changes if c.command == "Credit" and c.rule == "FIELD_WIDTH"]
    assert len(credit) == 2  # Credit and CreditResponse
    assert all(c.breaking for c in review.of("wire"))


def test_added_commands_are_compatible() -> None:
    """Seq 15 adds commitoffset and queryoffset; seq 61 the super-stream commands."""
    for seq, added in (
        (15, {"CommitOffset", "QueryOffset"}),
        (61, {"CreateSuperStream", "DeleteSuperStream"}),
    ):
        review = _review(seq)
        assert {c.command for c in review.changes if c.rule == "COMMAND_ADDED"} == added
        assert not review.breaking


def test_a_new_message_version_is_compatible() -> None:
    """Seq 52: Deliver version 2 (CommittedOffset); seq 59: Publish version 2 (FilterValue)."""
    deliver = _review(52)
    assert [c.rule for c in deliver.of("wire")] == ["VERSION_ADDED"]
    assert "CommittedOffset" in deliver.of("wire")[0].summary
    assert not deliver.breaking
    publish = _review(59)
    assert [c.rule for c in publish.of("wire")] == ["VERSION_ADDED"]
    assert "FilterValue" in publish.of("wire")[0].summary
    assert not publish.breaking


def test_renames_are_names_only() -> None:
    """Seq 34: commitoffset becomes storeoffset, key 10 unchanged."""
    review = _review(34)
    assert [c.summary for c in review.changes if c.rule == "COMMAND_RENAMED"] == [
        "CommitOffset -> StoreOffset"
    ]
    assert not review.of("wire")


def test_streaminfo_becomes_streamstats() -> None:
    """Seq 55: renamed (same key), and Value string -> int64 under a new array name."""
    review = _review(55)
    assert "StreamInfo -> StreamStats" in [
        c.summary for c in review.changes if c.rule == "COMMAND_RENAMED"
    ]
    assert review.breaking
    renamed = [c.summary for c in review.changes if c.rule == "FIELD_RENAMED"]
    assert "CommittedOffset -> CommittedChunkId" in renamed


def test_rekeyed_sender_and_response_changes() -> None:
    # seq 50: consumerupdate 0x0020 -> 0x001a in the table
    assert [c.summary for c in _review(50).changes if c.rule == "COMMAND_REKEYED"] == [
        "key 0x0020 -> 0x001a"
    ]
    # seq 31: open moves from Server to Client
    sender = [c for c in _review(31).changes if c.rule == "COMMAND_SENDER"]
    assert [c.command for c in sender] == ["Open"] and sender[0].breaking
    # seq 24: metadata now expects a response; MetadataResponse gains ResponseCode
    review = _review(24)
    assert [c.command for c in review.changes if c.rule == "COMMAND_RESPONSE"] == ["Metadata"]
    added = [c for c in review.changes if c.rule == "FIELD_ADDED"]
    assert [(c.command, c.new_path) for c in added] == [("Metadata", ("ResponseCode",))]
    # seq 45: a new response code is compatible
    review = _review(45)
    assert [c.summary for c in review.changes if c.rule == "ENUM_VALUE_ADDED"] == [
        "NO_OFFSET = 19 added"
    ]
    assert not review.breaking


def test_direction_decides_whom_a_change_breaks() -> None:
    """A field the server may now leave null breaks only old clients reading new servers."""
    review = _review(12)  # CreditResponse appears: the server may now send it
    added = [c for c in review.changes if c.rule == "MESSAGE_ADDED"]
    assert [c.command for c in added] == ["Credit"]
    assert added[0].breaks == (OLD_CLIENT,)


# ---- the command line


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose PROTOCOL.adoc went through seq 27, 28 (renumbering) and 41, 42."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    for seq in (27, 28, 41, 42):
        shutil.copy(_file(seq), repo / "PROTOCOL.adoc")
        _git(repo, "add", "PROTOCOL.adoc")
        _git(repo, "commit", "-q", "-m", f"seq {seq}")
    monkeypatch.chdir(repo)
    return repo


def test_fail_on_breaking_fails_on_the_renumbering(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["diff", "HEAD~3:PROTOCOL.adoc", "HEAD~2:PROTOCOL.adoc", "--fail-on-breaking"])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("specgen diff HEAD~3:PROTOCOL.adoc -> HEAD~2:PROTOCOL.adoc\nBREAKING")
    assert "COMMAND_REKEYED" in out and "[breaks: both ways]" in out


def test_fail_on_breaking_passes_on_prose_and_names(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # seq 41 -> 42 writes keys in hex and response keys with their bit: same bytes
    code = main(["diff", "HEAD~1:PROTOCOL.adoc", "PROTOCOL.adoc", "--fail-on-breaking"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "compatible: 0 wire changes, 0 breaking" in out


def test_markdown_and_json(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "HEAD~3:PROTOCOL.adoc", "HEAD~2:PROTOCOL.adoc", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["breaking"] is True
    assert doc["counts"]["breaking"] == sum(1 for c in doc["changes"] if c["breaking"])
    rekeyed = [c for c in doc["changes"] if c["rule"] == "COMMAND_REKEYED"]
    assert rekeyed and all(c["breaks"] == [OLD_CLIENT, NEW_CLIENT] for c in rekeyed)
    assert (
        main(["diff", "HEAD~3:PROTOCOL.adoc", "HEAD~2:PROTOCOL.adoc", "--format", "markdown"]) == 0
    )
    md = capsys.readouterr().out
    assert md.startswith("### specgen diff: `HEAD~3:PROTOCOL.adoc` → `HEAD~2:PROTOCOL.adoc`")
    assert "| `COMMAND_REKEYED` | Subscribe | key 0x0006 -> 0x0007 | both ways |" in md


def test_a_bad_revision_is_one_line(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "nosuchrev:PROTOCOL.adoc", "PROTOCOL.adoc"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("specgen: nosuchrev:PROTOCOL.adoc: ") and err.count("\n") == 1


def test_code_diff_shows_the_new_version(capsys: pytest.CaptureFixture[str]) -> None:
    # seq 52 spells a type `unit32`: its code is rendered as generate would, with the reading
    # accepted by name
    assert main(["diff", str(_file(51)), str(_file(52)), "--code"]) == 2
    assert "type-typo: unit32" in capsys.readouterr().err
    assert main(["diff", str(_file(51)), str(_file(52)), "--code", "--accept", "type-typo"]) == 0
    out = capsys.readouterr().out
    assert "VERSION_ADDED" in out
    assert "\n+class DeliverV2:" in out or "\n+class DeliverV2(" in out
    assert "+++ b/rabbitmq_stream/" in out


def test_ir_and_lint_take_any_spec_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ir", str(_file(20))]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == _file(20).stem
    assert main(["lint", str(_file(20))]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\d+ findings", out)


def test_generate_any_spec_file_and_run_its_conformance_tests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seq 29 (the signed-to-unsigned version) generates into a folder of its own, and the
    generated conformance tests pass against the generated codec."""
    out = tmp_path / "gen29"
    assert main(["generate", str(_file(29)), "--out", str(out)]) == 0
    module = out / "rabbitmq_stream" / "v2021_02_26_a807027adf"
    assert (module / "commands.py").is_file()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", str(module)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert re.search(r"\d+ passed", run.stdout)


def test_generate_out_refuses_a_folder_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["generate", str(_file(29)), "--out", str(foreign)]) == 2
    assert (
        "not empty; specgen generate writes into a new or empty folder" in capsys.readouterr().err
    )
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert main(["generate", str(_file(29))]) == 2  # one spec, no --out: generated/ is not it


def _every_version() -> list[Path]:
    assert CORPUS is not None
    return sorted(CORPUS.glob("*.adoc")) + sorted((CORPUS / "branches").glob("*.adoc"))


def test_every_corpus_version_lints_and_generates(capsys: pytest.CaptureFixture[str]) -> None:
    """All 79 versions lint (each with its findings, file:line:column) and go through every
    emitter to valid Python (compiled, not black-formatted: black is most of the time, and
    seq 29 above goes all the way)."""
    from specgen.emitters.render import Renderer
    from specgen.emitters.verify import VerifyError
    from specgen.generate import render_all

    renderer = Renderer(format_code=False)
    versions = _every_version()
    assert len(versions) == len(_main_line()) + len(index(CORPUS / "branches" / "index.tsv"))
    for path in versions:
        assert main(["lint", str(path)]) == 0
        lint = capsys.readouterr().out.splitlines()
        assert re.fullmatch(r"(\d+) findings, 0 overlay entries applied", lint[-1]), lint[-1]
        assert int(lint[-1].split()[0]) == len(lint) - 1 > 0
        assert all(re.match(r"\S+\.adoc:\d+:\d+: [a-z-]+: ", line) for line in lint[:-1])
        # a version whose reading decides bytes by a guess (a type typo; two commands under
        # one key) is refused until accepted by name, and renders once accepted
        spec = resolve(str(path))
        wire = [line for line in lint[:-1] if "[decides bytes; generate refuses it" in line]
        try:
            files = render_all([spec], renderer)
            refused = ""
        except VerifyError as e:
            refused = str(e)
            accepted = replace(spec, accept=("type-typo", "duplicate-key"))
            files = render_all([accepted], renderer)
        if wire:
            assert refused, (path.name, wire)
        if refused:
            assert re.search(r"\.adoc:\d+:\d+: (type-typo|duplicate-key): ", refused), refused
        modules = [rel for rel in files if rel.endswith("/commands.py")]
        assert len(modules) == 1, (path.name, sorted(files))
        for rel, text in files.items():
            compile(text, f"{path.name}:{rel}", "exec")


def test_the_changelog_does_not_depend_on_the_hash_seed() -> None:
    """Two interpreters with different string hashing print the same changelog: the frame's
    header fields (early: int16/int32, 4.0: uint16/uint32) are listed in header order."""
    outputs = set()
    for seed in ("1", "2", "3"):
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "specgen",
                "diff",
                "rabbitmq-stream/early",
                "rabbitmq-stream/4.0",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert run.returncode == 0, run.stderr
        outputs.add(run.stdout)
    (text,) = outputs
    header = re.findall(r"FRAME_FIELD_SIGNEDNESS +frame / (\w+):", text)
    assert header == ["Size", "Key", "Version"], header
