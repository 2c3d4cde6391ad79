"""Reading a spec document's text: every front-end reads its files through `read_spec_text`.

Bytes that are not UTF-8 are then one SpecSyntaxError naming file:line:column (the first bad
byte) in every format, never a UnicodeDecodeError traceback. The text comes back as
`Path.read_text(encoding="utf-8")` would give it: line ends (CRLF, CR) read as LF, a byte order
mark kept (the XML reader drops it).
"""

from __future__ import annotations

from pathlib import Path

from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.ir import SourceSpan


def read_spec_text(path: Path, rel: str) -> str:
    """The text of the file at `path`; `rel` is how an error names the file."""
    return decode_spec_text(path.read_bytes(), rel)


def decode_spec_text(data: bytes, rel: str) -> str:
    """`data` as UTF-8 with line ends read as LF; raises SpecSyntaxError at the first byte that
    is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        error = _error(data, e, rel)
    else:
        return _lf(text)
    raise error  # outside the handler, so no UnicodeDecodeError rides along as __context__


def not_utf8(data: bytes, rel: str) -> SpecSyntaxError | None:
    """The error `decode_spec_text` would raise for `data`, or None when it is all UTF-8."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return _error(data, e, rel)
    return None


def _error(data: bytes, e: UnicodeDecodeError, rel: str) -> SpecSyntaxError:
    """At the first bad byte's line and column (1-based; the column counts the characters before
    it on its line), naming the bytes Python's decoder refused together."""
    # all UTF-8, as it ends before the first bad byte; a byte order mark is no column
    before = _lf(data[: e.start].decode("utf-8")).removeprefix("\ufeff")
    line_start = before.rfind("\n") + 1
    span = SourceSpan(rel, before.count("\n") + 1, len(before) - line_start + 1)
    bad = data[e.start : max(e.end, e.start + 1)]
    what = "byte" if len(bad) == 1 else "bytes"
    return SpecSyntaxError(span, f"not UTF-8 ({what} {' '.join(f'0x{b:02x}' for b in bad)})")


def _lf(text: str) -> str:
    # as reading in text mode does (universal newlines), so spans count lines as they did
    return text.replace("\r\n", "\n").replace("\r", "\n")
