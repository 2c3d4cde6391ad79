"""AMQP 0-10's dialogue grammars, read from the flattened text (`amqp-0-10-text.txt`).

The text states, per class, the command sequences it allows as ABNF over steps
(`connection = open-connection *use-connection close-connection`, `tx = C:SELECT / C:COMMIT /
C:ROLLBACK`, `message = *:TRANSFER [ R:ACQUIRE ] ...`), inline in its one-line paragraphs.
`abnf.find_blocks(..., "inline")` gives one Block per rule; this module reads them into
`ir.Dialogue`s, one per class, whose meaning (`C:`, `S:`, `*:`, `R:`, nesting, several grammars
in one class) `specgen.dialogue` states.

How Blocks become dialogues (the rules this module applies):

* Rules that follow each other with only whitespace between them form one grammar, as the
  text writes a class's grammar as one run of rules; a run that holds no step (`C:`, `S:`...)
  is a type's ABNF, not a grammar.
* A run belongs to the class its first rule names: the class itself (`message = ...`), or
  `class-` and a word (`dtx-demarcation`, `dtx-coordination`: the dtx class's two grammars).
  A run that names no class is a finding (`dialogue-class`) and is not read.
* A rule defined twice in one class keeps its first definition (`dialogue-duplicate`).
* A grammar is read as written: `tx = C:SELECT / C:COMMIT / C:ROLLBACK` is one command, and
  `message = *:TRANSFER ...` one transfer with its settlement. 0-9-1 repeats its class
  grammars through the channel's (`*use-channel`, `functional-class`); 0-10 states no session
  grammar that would, so a session's traffic in a class is a sequence of such conversations,
  checked one by one (dtx's grammars repeat themselves: `*demarcation`, `*coordination`).

Findings for `specgen lint`, each at its rule's line and column: names no rule defines
(`dialogue-undefined`; the checker then refuses the grammar), names read by convention as no
step (`dialogue-convention`: `channel` in `use-connection = *channel`, `content`), steps that
are no control or command of their class (`dialogue-step`: the queue grammar's `C:BIND` and
`C:UNBIND`, which 0-10 moved to the exchange class), a class's controls and commands that its
grammar never names (`dialogue-absent`: a conversation holding them breaks), and `|`, which
the text writes once for `/` (`dialogue-bar`: ABNF's alternation binds loosest, so in
`C:OPEN S:OPEN-OK | S:REDIRECT` the redirect stands for the whole opening, not for OPEN-OK).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from specgen import abnf, dialogue
from specgen.frontends.adoc_tree import SpecSyntaxError
from specgen.frontends.spec_text import read_spec_text
from specgen.ir import Dialogue, FindingLog, SourceSpan

PROTOCOL_HEADER = "protocol-header"  # the bytes that open a connection: a step, no control


def read(
    path: Path,
    rel: str,
    classes: Sequence[str],
    methods: Sequence[str],
    log: FindingLog,
) -> tuple[Dialogue, ...]:
    """Each class's dialogue grammar from the text at `path` (`rel` in messages); `classes` in
    the document's order, `methods` the qualified names of its controls and commands."""
    if not path.is_file():
        return ()  # the XML front-end already reports the missing text (`text-absent`)
    text = read_spec_text(path, rel)
    starts = [0]
    for row in text.split("\n")[:-1]:
        starts.append(starts[-1] + len(row) + 1)
    runs: list[list[tuple[abnf.Block, tuple[abnf.Rule, ...]]]] = []
    last_end = -1
    for block in abnf.find_blocks(text, rel, "inline"):
        try:
            rules = abnf.parse_rules(block.text, rel, block.line, block.column)
        except SpecSyntaxError:
            continue  # the XML front-end's ABNF check reports it (`text-abnf`)
        at = starts[block.line - 1] + block.column - 1
        if runs and text[last_end:at].strip() == "":
            runs[-1].append((block, rules))
        else:
            runs.append([(block, rules)])
        last_end = at + len(block.text)
    grammars: dict[str, list[tuple[abnf.Block, tuple[abnf.Rule, ...]]]] = {}
    for run in runs:
        run_rules = [r for _, group in run for r in group]
        if not any(True for r in run_rules for _ in abnf.steps(r.expr)):
            continue
        first = run_rules[0]
        name = first.name.lower()
        owner = next((c for c in classes if name == c), None) or next(
            (c for c in classes if name.startswith(f"{c}-")), None
        )
        if owner is None:
            log.add(
                first.span,
                "dialogue-class",
                f"a grammar starts with rule {first.name}, which names no class",
                "not read",
            )
            continue
        grammars.setdefault(owner, []).extend(run)
    out: list[Dialogue] = []
    for cls in classes:
        if cls not in grammars:
            continue
        kept: dict[str, abnf.Rule] = {}
        ordered: list[abnf.Rule] = []
        for _, group in grammars[cls]:
            for r in group:
                key = r.name.lower()
                if key in kept and not r.incremental:
                    log.add(
                        r.span,
                        "dialogue-duplicate",
                        f"class {cls}'s grammar defines {r.name} again (first at {kept[key].span})",
                        "the first definition",
                    )
                    continue
                kept.setdefault(key, r)
                ordered.append(r)
        for block, _ in grammars[cls]:
            if " | " in block.text:
                column = block.column + block.text.index(" | ") + 1
                log.add(
                    SourceSpan(rel, block.line, column),
                    "dialogue-bar",
                    f"'|' in {block.text.split(' =', 1)[0]}: read as ABNF's '/', whose "
                    "alternatives are the whole sequences on either side",
                    "as ABNF reads it",
                )
        doc = "\n".join(block.text for block, _ in grammars[cls])
        out.append(Dialogue(cls, tuple(ordered), ordered[0].name, ordered[0].span, doc))
    found = tuple(out)
    _lint(found, methods, log)
    return found


def _lint(found: tuple[Dialogue, ...], methods: Sequence[str], log: FindingLog) -> None:
    for span, owner, name in dialogue.undefined(found):
        log.add(
            span,
            "dialogue-undefined",
            f"class {owner}'s grammar names {name}, which no rule, class or convention defines",
            "the conversation checker refuses the grammar",
        )
    for span, owner, name in dialogue.conventional(found):
        log.add(
            span,
            "dialogue-convention",
            f"class {owner}'s grammar names {name}, which the document never defines",
            "read as no step (see specgen.dialogue)",
        )
    known = set(methods)
    for d in found:
        named: set[str] = set()
        for r in d.rules:
            for step in abnf.steps(r.expr):
                qualified = dialogue.terminal(d.name, step)
                named.add(qualified)
                if qualified not in known and step.name.lower() != PROTOCOL_HEADER:
                    log.add(
                        r.span,
                        "dialogue-step",
                        f"class {d.name}'s grammar names {step.role}:{step.name}, which is no "
                        f"control or command of class {d.name}",
                        "kept: a conversation can only take it by that name",
                    )
        absent = [m for m in methods if m.startswith(f"{d.name}.") and m not in named]
        if absent and d.span is not None:
            log.add(
                d.span,
                "dialogue-absent",
                f"class {d.name}'s grammar never names {', '.join(absent)}",
                "a conversation that holds them breaks there",
            )
