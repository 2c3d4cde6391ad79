"""What `specgen lint` reports: a spec's contradictions and ambiguities, with their spans."""

from __future__ import annotations

from dataclasses import dataclass, field

from specgen.spans import SourceSpan


@dataclass(frozen=True, slots=True)
class Finding:
    """A contradiction or ambiguity in a spec, as `specgen lint` reports it."""

    span: SourceSpan
    code: str  # short stable id, e.g. "head-undefined"
    message: str
    resolution: str = ""

    def __str__(self) -> str:
        text = f"{self.span}: {self.code}: {self.message}"
        return f"{text} -> {self.resolution}" if self.resolution else text


@dataclass(slots=True)
class FindingLog:
    items: list[Finding] = field(default_factory=list)
    # finding codes an overlay accepts by name (code -> the entry's id): generation goes on
    # with the front-end's reading of them
    accepted: dict[str, str] = field(default_factory=dict)

    def add(self, span: SourceSpan, code: str, message: str, resolution: str = "") -> None:
        self.items.append(Finding(span, code, message, resolution))
