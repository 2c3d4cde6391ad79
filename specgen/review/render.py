"""A Review as a reviewer reads it: terminal text, a markdown pull-request comment, or JSON.

All three list the same changes in the same order: breaking wire changes first, then compatible
wire changes, then renames, then prose. Each change names the rule that classified it.
"""

from __future__ import annotations

import json
from typing import Any

from specgen.review.changes import NEW_CLIENT, OLD_CLIENT, RULES, Change, Review

FORMATS = ("text", "markdown", "json")


def sections(review: Review) -> list[tuple[str, list[Change]]]:
    wire = review.of("wire")
    return [
        ("Breaking on the wire", [c for c in wire if c.breaking]),
        ("Compatible on the wire", [c for c in wire if not c.breaking]),
        ("Names only (not on the wire)", review.of("names")),
        ("Prose only (never breaking)", review.of("prose")),
    ]


def headline(review: Review) -> str:
    wire = review.of("wire")
    breaking = review.breaking
    parts = [
        f"{len(wire)} wire change{'s' if len(wire) != 1 else ''}",
        f"{len(breaking)} breaking",
        f"{len(review.of('names'))} names only",
        f"{len(review.of('prose'))} prose only",
    ]
    verdict = "BREAKING" if breaking else "compatible"
    return f"{verdict}: {', '.join(parts)}"


def _deployments(c: Change) -> str:
    if not c.breaks:
        return "-"
    if set(c.breaks) == {OLD_CLIENT, NEW_CLIENT}:
        return "both ways"
    return c.breaks[0]


def text(review: Review) -> str:
    out = [f"specgen diff {review.old_label} -> {review.new_label}", headline(review), ""]
    for title, changes in sections(review):
        if not changes:
            continue
        out.append(f"{title} ({len(changes)}):")
        for c in changes:
            breaks = f"  [breaks: {_deployments(c)}]" if c.breaking else ""
            out.append(f"  {c.rule:<24} {c.where}: {c.summary}{breaks}")
            if c.category == "wire":
                out.append(f"  {'':<24} rule: {c.reason}")
        out.append("")
    if review.code is not None:
        out.append("Generated code:")
        out.append(review.code if review.code else "  (no change)")
    return "\n".join(out).rstrip() + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(review: Review) -> str:
    icon = ":x:" if review.breaking else ":white_check_mark:"
    out = [
        f"### specgen diff: `{review.old_label}` → `{review.new_label}`",
        "",
        f"{icon} **{headline(review)}**",
        "",
    ]
    for title, changes in sections(review):
        if not changes:
            continue
        out.append(f"#### {title} ({len(changes)})")
        out.append("")
        if title.startswith("Prose"):
            out.append("<details><summary>show</summary>")
            out.append("")
        out.append("| rule | where | change | breaks | why |")
        out.append("|---|---|---|---|---|")
        for c in changes:
            why = c.reason if c.category == "wire" else ""
            out.append(
                f"| `{c.rule}` | {_md(c.where)} | {_md(c.summary)} | {_deployments(c)} | {_md(why)} |"
            )
        if title.startswith("Prose"):
            out.append("")
            out.append("</details>")
        out.append("")
    if review.code is not None:
        out.append("<details><summary>Generated code diff</summary>")
        out.append("")
        out.append("```diff")
        out.append(review.code.rstrip() or "(no change)")
        out.append("```")
        out.append("</details>")
    return "\n".join(out).rstrip() + "\n"


def as_json(review: Review) -> str:
    def change(c: Change) -> dict[str, Any]:
        return {
            "rule": c.rule,
            "category": c.category,
            "breaking": c.breaking,
            "breaks": list(c.breaks),
            "where": c.where,
            "summary": c.summary,
            "reason": c.reason,
            "command": c.command,
            "version": c.version,
            "old_path": list(c.old_path),
            "new_path": list(c.new_path),
            "old_span": str(c.old_span) if c.old_span else None,
            "new_span": str(c.new_span) if c.new_span else None,
        }

    doc = {
        "old": review.old_label,
        "new": review.new_label,
        "breaking": bool(review.breaking),
        "counts": {
            "wire": len(review.of("wire")),
            "breaking": len(review.breaking),
            "names": len(review.of("names")),
            "prose": len(review.of("prose")),
        },
        "changes": [change(c) for _, cs in sections(review) for c in cs],
        "rules": RULES,
        **({"code": review.code} if review.code is not None else {}),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def render(review: Review, fmt: str) -> str:
    if fmt == "markdown":
        return markdown(review)
    if fmt == "json":
        return as_json(review)
    return text(review)
