"""What makes `generate` and `check` fast must not change what they write or what they find.

black runs without its safety checks during generation (`black.format_str`), its output comes
from a manifest or a cache when the text was formatted before (`specgen.format_cache`), and
protocol packages render in worker processes (`specgen.generate.render`). So: black's own
safety checks (the AST is unchanged, a second pass changes nothing) run here over every
generated module, against the text the generator would write; a stored answer is used only
when it is provably black's; a hand-edited file is still found; the pool's output is the
serial run's, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import black
import pytest
from black.report import NothingChanged

from specgen import format_cache, generate
from specgen.emitters.render import Renderer
from specgen.format_cache import BLACK_MODE, MANIFEST, Formatter
from specgen.locations import CHECKOUT
from specgen.specs import SpecVersion, registry

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"

UGLY = "x = [ 1,2,\n 3 ]\ndef f( a ):\n  return a\n"
PRETTY = black.format_str(UGLY, mode=BLACK_MODE)


class Recording(Formatter):
    """The cached formatter, keeping every text it was asked to format and its answer."""

    def __init__(self, tree: Path | None, folder: Path | None) -> None:
        super().__init__(tree, folder)
        self.pairs: dict[str, str] = {}

    def format(self, text: str) -> str:
        out = super().format(text)
        self.pairs[text] = out
        return out


def _safe(pair: tuple[str, str]) -> str | None:
    """black with its safety checks on (equivalent AST, stable on a second pass): None when its
    output is `expected`, else what went wrong."""
    text, expected = pair
    try:
        out = black.format_file_contents(text, fast=False, mode=BLACK_MODE)
    except NothingChanged:
        out = text
    except Exception as e:  # black's safety checks raise AssertionError
        return f"{type(e).__name__}: {e}"
    return None if out == expected else "the stored output is not black's"


@pytest.mark.slow
def test_every_generated_module_passes_blacks_safety_checks() -> None:
    recording = Recording(GENERATED, None)
    files = generate.render_all(renderer=Renderer(formatter=recording))
    # what was rendered is what generated/ holds (the committed check, through the recorder)
    for rel, text in files.items():
        assert (GENERATED / rel).read_text(encoding="utf-8") == text, rel
    assert len(recording.pairs) >= 60
    pairs = sorted(recording.pairs.items())
    with ProcessPoolExecutor(min(len(pairs), os.cpu_count() or 1)) as pool:
        problems = [p for p in pool.map(_safe, pairs) if p is not None]
    assert problems == []


# ---- the manifest beside a generated tree


def _tree(tmp_path: Path, manifest: dict[str, str] | None = None) -> Path:
    """A generated tree holding PRETTY, with a manifest saying UGLY formats to it."""
    tree = tmp_path / "generated"
    tree.mkdir()
    (tree / "m.py").write_text(PRETTY, encoding="utf-8")
    writer = Formatter()
    writer.format(UGLY)
    text = writer.manifest_text()
    if manifest is not None:
        data = json.loads(text)
        data.update(manifest)
        text = json.dumps(data)
    (tree / MANIFEST).write_text(text, encoding="utf-8")
    return tree


def _no_black(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> str:
        raise AssertionError("black ran")

    monkeypatch.setattr(black, "format_str", refuse)


def test_a_manifest_entry_takes_the_committed_file_without_black(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path)
    _no_black(monkeypatch)
    formatter = Formatter(tree)
    assert formatter.format(UGLY) == PRETTY
    assert formatter.ran == 0
    assert formatter.used == {format_cache.key(UGLY): format_cache.digest(PRETTY)}


def test_a_hand_edited_file_is_formatted_afresh(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "m.py").write_text(PRETTY + "# edited\n", encoding="utf-8")
    formatter = Formatter(tree)
    assert formatter.format(UGLY) == PRETTY
    assert formatter.ran == 1


@pytest.mark.parametrize(
    "damage",
    [
        "{not json",
        "[]",
        json.dumps({"black": "black 0.0; mode other", "formatted": {}}),
        json.dumps({"black": "x", "formatted": "nothing"}),
        "",
    ],
)
def test_a_corrupt_or_foreign_manifest_only_costs_time(tmp_path: Path, damage: str) -> None:
    tree = _tree(tmp_path)
    (tree / MANIFEST).write_text(damage, encoding="utf-8")
    formatter = Formatter(tree)
    assert formatter.format(UGLY) == PRETTY
    assert formatter.ran == 1


def test_another_blacks_manifest_knows_no_key(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"black": "black 0.0; mode other"})
    formatter = Formatter(tree)
    assert formatter.format(UGLY) == PRETTY
    assert formatter.ran == 1


def test_a_missing_manifest_or_tree_only_costs_time(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / MANIFEST).unlink()
    for where in (tree, tmp_path / "nowhere"):
        formatter = Formatter(where)
        assert formatter.format(UGLY) == PRETTY
        assert formatter.ran == 1


def test_the_manifest_is_sorted_and_the_same_whatever_the_order(tmp_path: Path) -> None:
    texts = [UGLY, "y=1\n", "z = ( 2 )\n"]
    a, b = Formatter(), Formatter()
    for t in texts:
        a.format(t)
    for t in reversed(texts):
        b.format(t)
    assert a.manifest_text() == b.manifest_text()
    keys = list(json.loads(a.manifest_text())["formatted"])
    assert keys == sorted(keys) and len(keys) == 3


# ---- the user's cache folder


def test_the_cache_answers_the_second_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    first = Formatter(folder=folder)
    assert first.format(UGLY) == PRETTY and first.ran == 1
    _no_black(monkeypatch)
    second = Formatter(folder=folder)
    assert second.format(UGLY) == PRETTY and second.ran == 0


def test_a_damaged_cache_entry_is_ignored_and_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    Formatter(folder=folder).format(UGLY)
    entry = folder / format_cache.key(UGLY)
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b"x", b"y"))  # what a torn write or a bad disk leaves
    again = Formatter(folder=folder)
    assert again.format(UGLY) == PRETTY and again.ran == 1
    assert entry.read_bytes() == data
    entry.write_bytes(b"")
    assert Formatter(folder=folder).format(UGLY) == PRETTY


def test_an_unwritable_cache_only_costs_time(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    formatter = Formatter(folder=blocker / "cache")
    assert formatter.format(UGLY) == PRETTY
    assert formatter.format(UGLY) == PRETTY


def test_the_cache_lives_in_the_users_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPECGEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert format_cache.cache_folder() == tmp_path / "xdg" / "specgen" / "format"
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "mine"))
    assert format_cache.cache_folder() == tmp_path / "mine"
    monkeypatch.delenv("SPECGEN_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert format_cache.cache_folder() == tmp_path / "home" / ".cache" / "specgen" / "format"
    assert Formatter.default(GENERATED, cached=False).settings() == (None, None)


def test_entries_unused_for_a_month_are_pruned(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    Formatter(folder=folder).format(UGLY)
    Formatter(folder=folder).format("y=1\n")
    old = folder / format_cache.key(UGLY)
    past = time.time() - (format_cache.PRUNE_DAYS + 1) * 86400
    os.utime(old, (past, past))
    compiled = tmp_path / "jinja" / "tag"
    compiled.mkdir(parents=True)
    (compiled / "old").write_bytes(b"")
    (compiled / "new").write_bytes(b"")
    os.utime(compiled / "old", (past, past))
    format_cache.prune(folder)
    assert sorted(p.name for p in folder.iterdir()) == [format_cache.key("y=1\n")]
    assert [p.name for p in compiled.iterdir()] == ["new"]
    format_cache.prune(tmp_path / "nowhere")


# ---- check and the pool over whole generations


@pytest.mark.skipif(CHECKOUT is None, reason="needs the checkout's generated/")
def test_check_finds_a_hand_edited_file_beside_a_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "generated"
    shutil.copytree(GENERATED, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert (copy / MANIFEST).is_file()
    edited = copy / "rabbitmq_stream" / "v4_0" / "commands.py"
    edited.write_text(edited.read_text(encoding="utf-8") + "# by hand\n", encoding="utf-8")
    (copy / "amqp_0_10" / "v0_10" / "spark_schema.py").unlink()  # gone: found missing
    monkeypatch.setattr(generate, "GENERATED", copy)  # the tree check compares and trusts
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    diffs = generate.stale()
    assert len(diffs) == 2
    assert "generated/amqp_0_10/v0_10/spark_schema.py (committed)" in diffs[0]
    assert "rabbitmq_stream/v4_0/commands.py" in diffs[1] and "-# by hand" in diffs[1]


@pytest.mark.skipif(CHECKOUT is None, reason="needs the checkout's generated/")
def test_the_pool_writes_what_the_serial_run_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    pooled = generate.render(jobs=2)
    serial = generate.render(jobs=1)
    assert list(pooled.files) == list(serial.files)
    assert pooled.files == serial.files
    assert pooled.formatter.manifest_text() == serial.formatter.manifest_text()
    for rel, text in pooled.files.items():
        assert (GENERATED / rel).read_text(encoding="utf-8") == text, rel


def _two_packages() -> list[SpecVersion]:
    chosen = {"rabbitmq-stream/early", "amqp-fast-0-8/0.8"}
    return [s for s in registry() if s.qualified in chosen]


class _Odd(Exception):
    """An error that does not survive pickling (its __init__ takes two arguments)."""

    def __init__(self, where: str, line: int) -> None:
        super().__init__(f"{where}:{line}: broken")


def test_a_package_failing_in_a_worker_raises_its_own_error_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    real = generate._render_package
    parent = os.getpid()
    calls: list[tuple[str, bool]] = []

    def failing(specs: list[SpecVersion], renderer: Renderer) -> object:
        calls.append((specs[0].package, os.getpid() == parent))
        if specs[0].package == "amqp_fast_0_8":
            raise _Odd("spec.xml", 3)
        return real(specs, renderer)

    monkeypatch.setattr(generate, "_render_package", failing)
    with pytest.raises(_Odd, match="spec.xml:3: broken"):
        generate.render(_two_packages(), jobs=2)
    assert calls == [("amqp_fast_0_8", True)]  # the workers' calls are in their own processes


def test_without_a_pool_the_packages_render_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECGEN_CACHE_DIR", str(tmp_path / "cache"))
    serial = generate.render(_two_packages(), jobs=1).files

    def no_pool(*_: object, **__: object) -> None:
        raise OSError("no /dev/shm")

    monkeypatch.setattr(generate, "ProcessPoolExecutor", no_pool)
    assert generate.render(_two_packages(), jobs=2).files == serial


def test_compiled_templates_are_kept_and_a_damaged_one_is_compiled_again(
    tmp_path: Path,
) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    body = "{% macro m(xs) %}\n{% for x in xs %}\n  {{ x }}\n{% endfor %}\n{% endmacro %}\n"
    (templates / "t.j2").write_text(body, encoding="utf-8")
    folder = tmp_path / "cache" / "format"

    def both(formatter: Formatter) -> tuple[str, str]:
        plain = Renderer(templates, formatter=formatter).macro("t.j2", "m", [1, 2])
        trimmed = Renderer(templates, formatter=formatter).trimmed_macro("t.j2", "m", [1, 2])
        return plain, trimmed

    expected = both(Formatter())  # no cache folder: compiled every time
    assert expected[0] != expected[1]
    assert both(Formatter(folder=folder)) == expected
    entries = [p for p in (tmp_path / "cache" / "jinja").rglob("*") if p.is_file()]
    assert len(entries) == 2  # one per environment: their options name their folders
    assert both(Formatter(folder=folder)) == expected
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-5] + b"xxxxx")
    assert both(Formatter(folder=folder)) == expected
    assert Renderer(templates).env.bytecode_cache is None
