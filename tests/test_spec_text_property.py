"""Hostile text in every text position a front-end reads: the generated code has the shape of
the same spec with plain text, the hostile text only inside string constants, or specgen refuses
in one located line.

Per front-end, a shipped spec's text positions (XML `<doc>` and `<p>` bodies and `label`s,
AsciiDoc field comments, RFC 006 field descriptions) are filled with hypothesis' texts: quotes
of both kinds, backslashes, `\\N{`, `#`, braces, line separators, non-BMP characters, a
marker-file payload, each position its own. The package is planned and rendered in this process
(no black: the shape is the same); every module's AST, with string constants and names blanked,
must equal the plain spec's. The XML documents are cut down to a few classes or parts, so that
an example takes a tenth of a second or two rather than most of a second; the templates are the
same.

Examples per front-end: SPECGEN_SPEC_TEXT_EXAMPLES (default 20, the fast layer); `.ci/run` runs
2,000 per front-end beside the suite. One package per front-end, with every trick in every
position, is also imported in a fresh interpreter and runs its own conformance tests.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import CodeType

import pytest
from fresh_python import import_everything, run_own_tests, string_constants
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specgen import generate, sources
from specgen.cli import INPUT_ERRORS
from specgen.emitters.render import Renderer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("SPECGEN_SPEC_TEXT_EXAMPLES", "20"))

# what Python's and black's tokenizers treat specially, and what real prose holds
NASTY = list("\"'\\#{}()[]%$`") + ["\\N{", '"""', "'''", "\\x", "\\u", "é", "\U0001f600", "\u2028"]
BREAKS = ["\n", "\r", "\u2029", "\x85", "\x0b", "\x0c"]
WORDS = ["import os", "__import__('os').system('touch RAN')", "RAN", "x", " ", "  "]


def _xml(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


# XML 1.0 has no other control characters: a document holding one is refused as not XML
_XML_BREAKS = ["\n", "\r", "\t"]


def texts(breaks: list[str], banned: str = "") -> st.SearchStrategy[str]:
    piece = st.sampled_from([p for p in NASTY + WORDS + breaks if not set(p) & set(banned)])
    return st.lists(piece, min_size=1, max_size=12).map(lambda ps: "w" + "".join(ps) + "w")


def _only_classes(*keep: str) -> Callable[[str], str]:
    """An AMQP XML document cut down to the classes `keep`: a render in a fraction of the
    time, the same templates."""

    def cut(text: str) -> str:
        return re.sub(
            r'(?s)\n  <class name ?= ?"([a-z]+)".*?\n  </class>',
            lambda m: m.group(0) if m.group(1) in keep else "",
            text,
        )

    return cut


def _only_parts(*drop: str) -> Callable[[str], str]:
    """AMQP 1.0's index without the parts `drop`."""

    def cut(text: str) -> str:
        for part in drop:
            text = text.replace(f'<li><p><xref type="amqp" name="{part}"/></p></li>', "")
        return text

    return cut


def _same(text: str) -> str:
    return text


POSITIONS_XML = re.compile(r"(?s)<(?:doc|p)>(?P<t>[^<]+?)</(?:doc|p)>|label ?= ?\"(?P<l>[^\"<]*)\"")


@dataclass(frozen=True)
class Format:
    folder: Path  # the shipped spec's folder, copied whole
    document: str  # the file whose text positions are filled
    positions: re.Pattern[str]
    escape: Callable[[str], str]  # text -> how the document writes it
    texts: st.SearchStrategy[str]
    main: str = ""  # the file specgen is given, when not `document`
    cut: tuple[str, Callable[[str], str]] = ("", _same)  # (file, reduction) for speed
    protocol: str | None = None  # when the file's name does not say


FORMATS: dict[str, Format] = {
    # the first published Streams reference: the smallest
    "adoc": Format(
        ROOT / "specs/rabbitmq-stream",
        "PROTOCOL-early.adoc",
        # field comments, but a key's (its value) and the one the front-end reads as layout
        re.compile(r"(?m)^(?!\s*Key\b)[^\n]*? // (?!\d|no int32)(?P<t>[^\n]+)$"),
        _same,
        texts([], banned="|>="),  # a comment is one line; | and => are the table's and the rule's
    ),
    "amqp091": Format(
        ROOT / "specs/amqp-0-9-1",
        "amqp0-9-1.xml",
        POSITIONS_XML,
        _xml,
        texts(_XML_BREAKS, banned="\u2028"),
        cut=("amqp0-9-1.xml", _only_classes("connection")),
    ),
    "amqp010": Format(
        ROOT / "specs/amqp-0-10",
        "amqp.0-10.xml",
        POSITIONS_XML,
        _xml,
        texts(_XML_BREAKS, banned="\u2028"),
        cut=("amqp.0-10.xml", _only_classes("connection", "session", "execution", "dtx")),
    ),
    "amqp10": Format(
        ROOT / "specs/amqp-1-0",
        "transport.xml",
        POSITIONS_XML,
        _xml,
        texts(_XML_BREAKS, banned="\u2028"),
        main="index.xml",
        cut=("index.xml", _only_parts("messaging", "transactions", "security")),
    ),
    "rfc006": Format(
        ROOT / "specs/amqp-fast-0-8",
        "amq-rfc006.txt",
        # the first line of each field's description in the commands' field lists
        re.compile(r"(?m)^[a-z][a-z-]+:\n    (?P<t>[A-Z][^\n]+)$"),
        _same,
        texts([], banned="|:=*+<>-~.^"),
        protocol="amqp-fast-0-8",
    ),
}


@cache
def _renderer() -> Renderer:
    """One renderer for every example: its templates compiled once."""
    return Renderer(format_code=False)


def _render(fmt: str, fill: Callable[[int], str], tmp: Path) -> dict[str, str] | str:
    """The package's files with position i holding fill(i), or the one-line refusal."""
    f = FORMATS[fmt]
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(f.folder, tmp)
    cut_file, cut = f.cut
    if cut_file:
        (tmp / cut_file).write_text(cut((f.folder / cut_file).read_text()))
    counter = iter(range(10**9))

    def put(m: re.Match[str]) -> str:
        group = "t" if m.group("t") is not None else "l"
        start, end = m.start(group) - m.start(), m.end(group) - m.start()
        return m.group()[:start] + f.escape(fill(next(counter))) + m.group()[end:]

    text = f.positions.sub(put, (tmp / f.document).read_text())
    (tmp / f.document).write_text(text)
    try:
        spec = sources.resolve(str(tmp / (f.main or f.document)), protocol=f.protocol)
        files, _ = generate._render_package([spec], _renderer())
    except INPUT_ERRORS as e:
        return str(e)
    return files


def _shape(source: str) -> tuple[str, ...]:
    """The module's syntax tree as its node types in walk order: its code, not its text (a
    string constant is one node whatever it holds; code that got out of one adds nodes)."""
    return tuple(type(node).__name__ for node in ast.walk(ast.parse(source)))


def _bytecode(source: str) -> tuple[object, ...]:
    """The module's compiled code with its constants' values left out: every code object's
    instructions and names, and its constants' types. Equal bytecode is the same code (a
    string constant loads the same way whatever it holds); it is the fast first look, three
    times quicker than `_shape` on a large module. The constants' positions in a code object
    depend on which texts are equal, so a difference here is settled by `_shape`."""

    def walk(code: CodeType) -> tuple[object, ...]:
        inner = tuple(walk(c) for c in code.co_consts if isinstance(c, CodeType))
        kinds = tuple(type(c).__name__ for c in code.co_consts)
        return (code.co_code, code.co_names, code.co_varnames, kinds, inner)

    return walk(compile(source, "module", "exec", dont_inherit=True))


@dataclass
class Plain:
    """A module of the plain spec: its text, bytecode and (on demand) shape."""

    text: str
    bytecode: tuple[object, ...]
    _shape: tuple[str, ...] | None = None

    def shape(self) -> tuple[str, ...]:
        if self._shape is None:
            self._shape = _shape(self.text)
        return self._shape


@cache
def _plain(fmt: str, n: int, tmp: Path) -> dict[str, Plain]:
    """Each module of the plain spec whose positions repeat `n` texts, as the hostile examples'
    do (so equal texts share constants alike)."""
    files = _render(fmt, lambda i: f"plain text {i % n}", tmp)
    assert isinstance(files, dict), files
    return {
        name: Plain(text, _bytecode(text)) for name, text in files.items() if name.endswith(".py")
    }


def test_every_format_has_text_positions() -> None:
    for fmt, f in FORMATS.items():
        assert len(f.positions.findall((f.folder / f.document).read_text())) >= 10, fmt


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_hostile_text_stays_text(fmt: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp(fmt)
    _plain(fmt, 1, base / "spec")  # plain text must render
    refusals: list[str] = []

    @given(st.lists(FORMATS[fmt].texts, min_size=1, max_size=16))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    def check(hostile: list[str]) -> None:
        out = _render(fmt, lambda i: hostile[i % len(hostile)], base / "spec")
        if isinstance(out, str):  # refused: one line, located
            assert "\n" not in out and re.match(r"^[^:\n]+:\d+:\d+: ", out), out
            refusals.append(out)
            return
        plain = _plain(fmt, len(hostile), base / "spec")
        assert set(out) >= set(plain)
        for name, p in plain.items():
            # a module the texts did not reach is the plain one, byte for byte
            if out[name] == p.text or _bytecode(out[name]) == p.bytecode:
                continue
            assert _shape(out[name]) == p.shape(), name

    check()
    # the texts are prose: a front-end that refused them all would test nothing
    assert len(refusals) < EXAMPLES, refusals[:3]


# one text that holds every trick at once, a marker-file payload among them
EVERYTHING = (
    'w""" + str(__import__("os").system("touch RAN")) + """ \'\'\' + str(__import__(\'os\')'
    ".system('touch RAN')) + ''' \\N{foo} \\x \\ # {} é \U0001f600 \"w"
)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_hostile_package_imports_cleanly_and_passes_its_own_tests(fmt: str, tmp_path: Path) -> None:
    """The package generated with EVERYTHING in every text position: a fresh interpreter
    imports every module (the payload never runs) and its conformance tests pass."""
    out = _render(fmt, lambda i: EVERYTHING, tmp_path / "spec")
    assert isinstance(out, dict), out
    root = tmp_path / "out"
    for name, text in {**generate.top_level(_renderer()), **out}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    imported = import_everything(root, tmp_path)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert not (tmp_path / "RAN").exists()
    # the text itself, whole, as the spec gave it
    assert any(EVERYTHING in t for t in string_constants(root))
    ran = run_own_tests(root, tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert not (tmp_path / "RAN").exists()
