"""Spec text is data: the one way it reaches generated code (`specgen.emitters.pytext`), the
templates' guard, and the reported repros: a spec whose prose holds Python never runs it.

The rendering functions are checked by reading their output back with `ast` (the value must be
the text); the guard by rendering templates that forget; the repros by generating from a copy of
each shipped spec with the hostile text placed where the issue found it, then importing the
package in a fresh interpreter and running its own conformance tests.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
from fresh_python import import_everything, run_own_tests, string_constants
from hypothesis import given, settings
from hypothesis import strategies as st

from specgen.emitters import pytext
from specgen.emitters.pytext import Code, SpecNameError, SpecText, UnrenderedSpecText
from specgen.emitters.render import Renderer
from specgen.spans import SourceSpan

ROOT = Path(__file__).resolve().parents[1]
SPECGEN = [sys.executable, "-m", "specgen"]

# the texts the issue and real prose bring: quotes of both kinds, backslashes, \N{, control
# characters, line separators, lone surrogates, very long lines
HOSTILE = [
    '""" + str(__import__("os").system("touch RAN")) + """',
    "''' + str(__import__('os').system('touch RAN')) + '''",
    "C:\\new\\x41 \\N{foo} \\u12 \\",
    'ends with a quote"',
    'ends with two quotes""',
    "tab\tcr\rnul\x00bell\x07",
    "line\u2028separator\u2029paragraph\x85next\x0cfeed",
    "lone \ud800 surrogate \udfff",
    "emoji \U0001f600 and é",
    "x" * 5000,
    "#comment\n\nimport os",
    "{{ jinja }} {% raw %}",
]

any_text = st.text(
    alphabet=st.one_of(
        st.characters(codec=None),  # anything, surrogates included
        st.sampled_from(list("\"'\\\n\r#{}\u2028")),
    ),
    max_size=200,
)


# --------------------------------------------------------------------------------------------
# The rendering functions: what they write means exactly the text


@pytest.mark.parametrize("text", HOSTILE)
def test_literal_evaluates_to_the_text(text: str) -> None:
    assert ast.literal_eval(pytext.literal(text)) == text


@given(any_text)
@settings(max_examples=500, deadline=None)
def test_literal_of_any_text_round_trips(text: str) -> None:
    assert ast.literal_eval(pytext.literal(text)) == text


@given(any_text, st.sampled_from(['"""', 'b = """']))
@settings(max_examples=500, deadline=None)
def test_doc_inside_a_triple_quoted_string_is_the_text(text: str, opener: str) -> None:
    source = f'{opener}{pytext.doc(text)}"""\n'
    tree = ast.parse(source)  # never a syntax error, whatever the text
    assert len(tree.body) == 1  # one statement: nothing got out of the string
    node = tree.body[0]
    value = node.value if isinstance(node, ast.Expr | ast.Assign) else None
    assert isinstance(value, ast.Constant) and value.value == text


@pytest.mark.parametrize("text", HOSTILE)
def test_two_docs_side_by_side_stay_inside(text: str) -> None:
    source = f'"""{pytext.doc(text)}{pytext.doc(text)}"""\n'
    [node] = ast.parse(source).body
    assert isinstance(node, ast.Expr) and node.value.value == text + text  # type: ignore[attr-defined]


@given(any_text)
@settings(max_examples=300, deadline=None)
def test_comment_is_one_line(text: str) -> None:
    source = f"# {pytext.comment(text)}\nx = 1\n"
    tree = ast.parse(source)
    assert [type(n) for n in tree.body] == [ast.Assign]
    assert "\n" not in pytext.comment(text) and "\r" not in pytext.comment(text)


@given(any_text)
@settings(max_examples=300, deadline=None)
def test_in_fstring_is_the_text_inside_an_fstring(text: str) -> None:
    [node] = ast.parse(f'x = f"{pytext.in_fstring(text)}"\n').body
    assert isinstance(node, ast.Assign)
    value = node.value
    # a text with braces is still one constant: no expression got in
    assert isinstance(value, ast.JoinedStr) and all(
        isinstance(v, ast.Constant) for v in value.values
    )
    assert "".join(v.value for v in value.values) == text  # type: ignore[attr-defined]


def test_numbers_come_from_values() -> None:
    assert pytext.number(4294967295) == "4294967295"
    assert pytext.literal((1, "a", None, True, b"\x00")) == "(1, 'a', None, True, b'\\x00')"
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError):
            pytext.number(bad)
    with pytest.raises(TypeError):
        pytext.number("12")  # a spelling is not a value


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("class", "keyword"),
        ("a-b", "not a Python identifier"),
        ("Foo(x)", "not a Python identifier"),
        ("1st", "not a Python identifier"),
        ("ﬁeld", "not a Python identifier"),  # NFKC would fold it into `field`
        ("", "not a Python identifier"),
        ("Decoder", "shadow"),
    ],
)
def test_identifiers_are_checked_with_the_rule_and_the_place(name: str, rule: str) -> None:
    span = SourceSpan("specs/x.xml", 12, 5)
    with pytest.raises(SpecNameError) as e:
        pytext.identifier(SpecText(name, span), "field", taken={"Decoder"})
    assert str(e.value).startswith("specs/x.xml:12:5: ") and rule in str(e.value)
    assert "\n" not in str(e.value)


def test_a_good_identifier_is_code() -> None:
    assert isinstance(pytext.identifier("max_frame_size", "field"), Code)


def test_mark_makes_every_string_spec_text_with_its_span() -> None:
    from specgen.specs import build_ir, find

    protocol, _ = build_ir(find("rabbitmq-stream/4.0"))
    marked = pytext.mark(protocol)
    assert marked == protocol  # the same IR, only marked
    command = marked.commands[0]
    assert isinstance(command.name, SpecText)
    assert command.name.span == command.span
    assert all(isinstance(f.name, SpecText) for m in command.messages for f in m.fields)


# --------------------------------------------------------------------------------------------
# The guard: a template that forgets cannot write spec text


def _render(tmp_path: Path, source: str, **context: object) -> str:
    (tmp_path / "t.py.j2").write_text(source)
    env = Renderer(tmp_path).env
    return env.get_template("t.py.j2").render(**context)


@pytest.mark.parametrize(
    "value",
    [
        SpecText("plain words"),  # even harmless spec text must be rendered
        'a " quote',
        "a back\\slash",
        "two\nlines",
        "sep\u2028arator",
        "an {expression}",  # inside an f-string it would run
    ],
)
def test_the_guard_refuses_raw_text(tmp_path: Path, value: str) -> None:
    with pytest.raises(UnrenderedSpecText) as e:
        _render(tmp_path, '"""{{ v }}"""\n', v=value)
    assert "t.py.j2:1" in str(e.value)


def test_the_guard_refuses_spec_text_reshaped_by_a_filter(tmp_path: Path) -> None:
    with pytest.raises(UnrenderedSpecText):
        _render(tmp_path, "{{ v | wordwrap(10) | indent(4) }}\n", v=SpecText("a b c d e f g"))


def test_rendered_text_and_code_pass(tmp_path: Path) -> None:
    hostile = SpecText(HOSTILE[0])
    out = _render(
        tmp_path,
        '"""{{ v | doc }}"""\nx = {{ v | literal }}  # {{ v | comment }}\n'
        "n = {{ 7 }}\ny = {{ c }}\n",
        v=hostile,
        c=Code('{"k": 1}'),
    )
    tree = ast.parse(out)
    assert ast.get_docstring(tree, clean=False) == hostile
    assert [type(n) for n in tree.body] == [ast.Expr, ast.Assign, ast.Assign, ast.Assign]


def test_a_name_that_is_no_identifier_is_a_located_error(tmp_path: Path) -> None:
    bad = SpecText("Open(__import__)", SourceSpan("specs/s.adoc", 3, 1))
    with pytest.raises(SpecNameError, match=r"^specs/s.adoc:3:1: spec name 'Open\(__import__\)'"):
        _render(tmp_path, "class {{ v | name }}:\n    pass\n", v=bad)


def test_a_name_shadowing_the_module_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "m.py.j2").write_text("import struct\n\n\nclass {{ v | name }}:\n    pass\n")
    renderer = Renderer(tmp_path, format_code=False)
    span = SourceSpan("specs/s.xml", 9, 2)
    env = renderer.env
    text = env.get_template("m.py.j2").render(v=SpecText("struct", span))
    with pytest.raises(SpecNameError, match=r"^specs/s.xml:9:2: name 'struct' .* bound twice"):
        pytext.check_bindings(text, "m.py.j2", renderer.names)


@pytest.mark.parametrize(
    "module",
    [
        "from x import (\n    a,\n    Open,  # why\n)\n\n\nclass Open:\n    pass\n",
        "import struct as Open\nOpen: int = 1\n",
        "def Open():\n    pass\n\n\nOpen = 2\n",
        "class len:\n    pass\n",
    ],
)
def test_every_way_to_bind_a_name_twice_is_found(module: str) -> None:
    with pytest.raises(SpecNameError):
        pytext.check_bindings(module, "m.py", {})


def test_a_name_in_a_docstring_is_no_binding() -> None:
    pytext.check_bindings(
        '"""\nfrom a import Open\nOpen = 1\n"""\n\n\nclass Open:\n    pass\n', "m.py", {}
    )


def test_the_template_cache_knows_the_guard(tmp_path: Path) -> None:
    # compiled templates from before the guard (or with other filters) are not reused
    from specgen.format_cache import Formatter, TemplateCache

    formatter = Formatter(folder=tmp_path / "format")
    plain = jinja2.Environment()
    guarded = Renderer(tmp_path, formatter=formatter).env
    a, b = TemplateCache.of(formatter, plain), TemplateCache.of(formatter, guarded)
    assert a is not None and b is not None and a.folder != b.folder


# --------------------------------------------------------------------------------------------
# The repros: hostile prose in a copy of each shipped spec


PAYLOAD = '""" + str(__import__("os").system("touch RAN")) + """'


def _xml_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def _inject(source: Path, anchor: str, after: str, text: str) -> str:
    content = source.read_text()
    i = content.index(after, content.index(anchor)) + len(after)
    return content[:i] + text + content[i:]


def _repro(name: str, payload: str) -> tuple[str, str]:
    """(file name, document) of a shipped spec with `payload` in a text position (for AMQP 1.0,
    its transport part; the other parts are copied beside it)."""
    if name == "adoc":
        doc = _inject(
            ROOT / "specs/rabbitmq-stream/PROTOCOL-4.0.adoc",
            "PublisherReference => string",
            "// max 256 characters",
            " " + payload,
        )
        return "PROTOCOL.adoc", doc
    if name == "amqp091":
        doc = _inject(
            ROOT / "specs/amqp-0-9-1/amqp0-9-1.xml",
            '<field name = "version-major"',
            "<doc>",
            _xml_text(payload),
        )
        return "amqp0-9-1.xml", doc
    if name == "amqp010":
        doc = _inject(
            ROOT / "specs/amqp-0-10/amqp.0-10.xml",
            '<control name="start"',
            "<doc>",
            _xml_text(payload),
        )
        return "amqp.0-10.xml", doc
    if name == "amqp10":
        doc = _inject(
            ROOT / "specs/amqp-1-0/transport.xml", 'name="open" source', "<p>", _xml_text(payload)
        )
        return "transport.xml", doc
    raise AssertionError(name)


FORMATS = ["adoc", "amqp091", "amqp010", "amqp10"]


def _generate(
    tmp_path: Path, name: str, payload: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    file, doc = _repro(name, payload)
    work = tmp_path / "work"
    work.mkdir()
    spec = work / file
    if name == "amqp10":  # the whole set, read through its index
        for part in (ROOT / "specs/amqp-1-0").glob("*.xml"):
            (work / part.name).write_text(part.read_text())
        spec.write_text(doc)
        spec = work / "index.xml"
    else:
        spec.write_text(doc)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*SPECGEN, "generate", str(spec), "--out", str(out), "--jobs", "1"],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=600,
    )
    return proc, out


@pytest.mark.parametrize("name", FORMATS)
def test_prose_holding_python_never_runs(tmp_path: Path, name: str) -> None:
    proc, out = _generate(tmp_path, name, PAYLOAD)
    assert proc.returncode == 0, proc.stderr
    work = tmp_path / "work"
    imported = import_everything(out, work)
    assert imported.returncode == 0, imported.stderr
    assert not (work / "RAN").exists() and not (out / "RAN").exists()
    # and the text is there, as the spec wrote it, in a docstring
    assert any(PAYLOAD in pytext.normalise_space(t) for t in string_constants(out))
    # the package's own conformance tests pass
    ran = run_own_tests(out, out)
    assert ran.returncode == 0, ran.stdout[-3000:]
    assert not (work / "RAN").exists() and not (out / "RAN").exists()


@pytest.mark.parametrize("name", FORMATS)
def test_backslashes_in_prose_generate_importable_code(tmp_path: Path, name: str) -> None:
    payload = "C:\\temp\\x and \\N{foo} and ^[a-z]\\d+$ \\"
    proc, out = _generate(tmp_path, name, payload)
    assert proc.returncode == 0, proc.stderr
    imported = import_everything(out, tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert any(payload.strip() in pytext.normalise_space(t) for t in string_constants(out))
