"""Malformed specs and overlays fail with file:line:column and leave generated/ untouched."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import SPEC_DIR

from specgen import generate, overlay
from specgen.frontends import adoc_tree
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import SourceSpan
from specgen.specs import SpecVersion, build_ir


def _broken_copy(tmp_path: Path, old: str, new: str) -> tuple[Path, int, int]:
    text = (SPEC_DIR / "PROTOCOL-4.0.adoc").read_text(encoding="utf-8")
    assert old in text
    broken = text.replace(old, new, 1)
    path = tmp_path / "PROTOCOL-broken.adoc"
    path.write_text(broken, encoding="utf-8")
    line = broken[: broken.index(new)].count("\n") + 1
    column = broken.index(new) - broken.rfind("\n", 0, broken.index(new))
    return path, line, column


def test_unclosed_bracket_names_line_and_column(tmp_path: Path) -> None:
    path, line, column = _broken_copy(
        tmp_path, "  Credit => uint16 // the number", "  Credit => [uint16 // the number"
    )
    with pytest.raises(SpecSyntaxError) as info:
        adoc_tree.parse(path.read_text(encoding="utf-8"), "specs/broken.adoc")
    assert info.value.span.file == "specs/broken.adoc"
    assert info.value.span.line == line
    # the error points into the broken rule, after its opening bracket
    assert info.value.span.column > column
    assert str(info.value).startswith(f"specs/broken.adoc:{line}:")


def test_unclosed_code_block_is_an_error(tmp_path: Path) -> None:
    text = (SPEC_DIR / "PROTOCOL-4.0.adoc").read_text(encoding="utf-8")
    cut = text[: text.index("== Authentication")] + "```\nHeartbeat => Key Version\n"
    with pytest.raises(SpecSyntaxError, match="unexpected end of file"):
        adoc_tree.parse(cut, "x.adoc")


def test_generate_with_a_broken_spec_leaves_generated_untouched(
    tmp_path: Path, v40: SpecVersion, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, line, _ = _broken_copy(
        tmp_path, "  Credit => uint16 // the number", "  Credit => [uint16 // the number"
    )
    target = tmp_path / "generated"
    target.mkdir()
    (target / "keep.py").write_text("sentinel\n")
    broken = replace(v40, document=path)
    monkeypatch.setattr(generate, "registry", lambda: [broken])
    with pytest.raises(SpecSyntaxError):
        generate.generate(target)
    assert [p.name for p in target.iterdir()] == ["keep.py"]
    assert (target / "keep.py").read_text() == "sentinel\n"


def test_write_tree_replaces_exactly_and_prunes(tmp_path: Path) -> None:
    target = tmp_path / "generated"
    generate.write_tree({"a/x.py": "1\n", "b.py": "2\n"}, target)
    generate.write_tree({"a/y.py": "3\n"}, target)
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.py")) == ["a/y.py"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".generated-")]


def _overlay(tmp_path: Path, entries: list[dict[str, object]]) -> Path:
    path = tmp_path / "overlay.json"
    path.write_text(json.dumps({"entries": entries}, indent=2), encoding="utf-8")
    return path


def _entry(**kw: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": "x",
        "op": "set",
        "target": "Credit",
        "attribute": "sender",
        "value": "server",
        "reason": "test",
        "evidence": ["test"],
    }
    base.update(kw)
    return base


def test_overlay_clash_is_an_error_unless_waived(tmp_path: Path, v40: SpecVersion) -> None:
    protocol, _ = build_ir(v40, with_overlay=False)
    clash = _overlay(tmp_path, [_entry(id="a"), _entry(id="b")])
    with pytest.raises(overlay.OverlayError, match="b targets Credit, as a does"):
        overlay.apply(protocol, overlay.load(clash, tmp_path))
    waived = _overlay(tmp_path, [_entry(id="a"), _entry(id="b", waives=["a"])])
    out = overlay.apply(protocol, overlay.load(waived, tmp_path))
    assert out.command("Credit").sender == "server"
    assert out.overlays == ("a", "b")


def test_stale_overlay_target_names_the_entry_and_its_line(
    tmp_path: Path, v40: SpecVersion
) -> None:
    protocol, _ = build_ir(v40, with_overlay=False)
    path = _overlay(
        tmp_path, [_entry(id="gone", op="replace", target="Credit.NoSuchField", field={})]
    )
    with pytest.raises(overlay.OverlayError) as info:
        overlay.apply(protocol, overlay.load(path, tmp_path))
    message = str(info.value)
    assert message.startswith("overlay.json:")
    assert "gone" in message and "NoSuchField" in message


def test_overlay_entry_without_evidence_is_refused(tmp_path: Path) -> None:
    path = _overlay(tmp_path, [_entry(evidence=[])])
    with pytest.raises(overlay.OverlayError, match="lacks evidence"):
        overlay.load(path, tmp_path)


def test_source_span_round_trip() -> None:
    span = SourceSpan("specs/a.adoc", 12, 3)
    assert SourceSpan.parse(str(span)) == span


def test_optional_field_must_trail_and_cannot_be_nullable(tmp_path: Path, v40: SpecVersion) -> None:
    protocol, _ = build_ir(v40, with_overlay=False)
    not_last = _overlay(
        tmp_path,
        [
            _entry(
                op="set",
                target="DeclarePublisherRequest.PublisherId",
                attributes={"optional": True},
            )
        ],
    )
    with pytest.raises(overlay.OverlayError, match="only trailing fields can be optional"):
        overlay.apply(protocol, overlay.load(not_last, tmp_path))
    both = _overlay(
        tmp_path,
        [
            _entry(
                op="set",
                target="SaslAuthenticateResponse.SaslOpaqueData",
                attributes={"optional": True},
            )
        ],
    )
    with pytest.raises(overlay.OverlayError, match="optional and nullable"):
        overlay.apply(protocol, overlay.load(both, tmp_path))
    bad = _overlay(
        tmp_path,
        [
            _entry(
                op="set", target="OpenResponse.ConnectionProperties", attributes={"optional": "yes"}
            )
        ],
    )
    with pytest.raises(overlay.OverlayError, match="takes `attributes`"):
        overlay.apply(protocol, overlay.load(bad, tmp_path))


def test_decode_keys_need_a_message_and_16_bit_keys(tmp_path: Path, v40: SpecVersion) -> None:
    protocol, _ = build_ir(v40, with_overlay=False)
    missing = _overlay(
        tmp_path,
        [_entry(op="set", target="NoSuchResponse", attribute="decode_keys", value=["0x0018"])],
    )
    with pytest.raises(overlay.OverlayError, match="no message 'NoSuchResponse'"):
        overlay.apply(protocol, overlay.load(missing, tmp_path))
    wide = _overlay(
        tmp_path,
        [_entry(op="set", target="RouteResponse", attribute="decode_keys", value=[0x10000])],
    )
    with pytest.raises(overlay.OverlayError, match="16-bit keys"):
        overlay.apply(protocol, overlay.load(wide, tmp_path))


def test_an_overlay_that_is_not_utf8_is_one_line_at_its_first_bad_byte(tmp_path: Path) -> None:
    path = _overlay(tmp_path, [_entry()])
    text = path.read_bytes()
    at = text.index(b'"test"')  # the reason's value, on its own line
    path.write_bytes(text[:at] + b"\xff" + text[at:])
    line = text[:at].count(b"\n") + 1
    column = at - (text.rfind(b"\n", 0, at) + 1) + 1
    with pytest.raises(overlay.OverlayError) as info:
        overlay.load(path, tmp_path)
    assert str(info.value) == f"overlay.json:{line}:{column}: not UTF-8 (byte 0xff)"
