"""Where a thing stands in a spec document, and the error that points there.

Every front-end and the IR name places in a spec by `SourceSpan`; `SpecSyntaxError` is what a
reader raises when the text breaks its grammar. Both live here, below the IR and every reader,
so that any of them can use them without importing another.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SourceSpan:
    file: str  # path relative to the project root, never absolute
    line: int
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def parse(cls, text: str) -> SourceSpan:
        file, line, column = text.rsplit(":", 2)
        return cls(file, int(line), int(column))


class SpecSyntaxError(ValueError):
    """The spec text does not follow the grammar; str() is `file:line:column: message`."""

    def __init__(self, span: SourceSpan, message: str, context: str = "") -> None:
        super().__init__(f"{span}: {message}" + (f"\n{context}" if context else ""))
        self.span = span
