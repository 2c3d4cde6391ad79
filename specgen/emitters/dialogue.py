"""Emitter: `dialogue.py`, a conversation checker per dialogue grammar of one spec version.

Each grammar (`Protocol.dialogues`) is compiled by `specgen.dialogue` to a DFA, written as data
(one dict of moves per state), with the grammar's own text as the docstring of its `check_*`
function. The module also maps the codec's message names (the frames table's `message` column)
to the steps they are, so a decoded capture can be checked without specgen.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from specgen.abnf import steps
from specgen.dialogue import PROTOCOL_HEADER, Automaton, compile_all, terminal, tops
from specgen.emitters.render import Renderer
from specgen.ir import Protocol
from specgen.registry import SpecVersion


@dataclass(frozen=True)
class DialoguePlan:
    name: str  # "connection"
    function: str  # "check_connection"
    const: str  # "_CONNECTION"
    start: str
    doc: str
    span: str
    automaton: Automaton


def hyphenated(camel: str) -> str:
    """`StartOk` -> `start-ok`, the XML's spelling of a method the IR names in CamelCase."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", camel).lower()


def methods(protocol: Protocol) -> dict[str, str]:
    """Message name -> step name ("ConnectionStartOk" -> "connection.start-ok") for every
    command `Class.Method` of a class with a dialogue, identified by class and method (0-9-1)
    or by one code and named by its grammar (RFC 006); a class's content properties (0-9-1's
    Basic.Properties: the class alone, named by no grammar) and frames of no class (bodies,
    heartbeats) are no steps."""
    classes = {d.name.lower() for d in protocol.dialogues}
    named = {
        terminal(d.name, s) for d in protocol.dialogues for r in d.rules for s in steps(r.expr)
    }
    out: dict[str, str] = {}
    for c in protocol.commands:
        cls, _, method = c.name.partition(".")
        step = f"{cls.lower()}.{hyphenated(method)}"
        if method and cls.lower() in classes and (len(c.ident) >= 2 or step in named):
            for m in c.messages:
                out[m.name] = step
    return out


def emit(spec: SpecVersion, protocol: Protocol, renderer: Renderer) -> dict[str, str]:
    """`dialogue.py` for the spec's grammars (none without them)."""
    if not protocol.dialogues:
        return {}
    automata = compile_all(protocol.dialogues)
    plans = [
        DialoguePlan(
            d.name.lower(),
            "check_" + re.sub(r"\W", "_", d.name.lower()),
            "_" + re.sub(r"\W", "_", d.name.upper()),
            # several grammars in one class (0-10's dtx) are interleaved: name them all
            "` interleaved with `".join([d.start, *(r.name for r in tops(d)[1:])]),
            d.doc,
            str(d.span),
            automata[d.name.lower()],
        )
        for d in protocol.dialogues
    ]
    text = renderer.render(
        "python/dialogue.py.j2",
        spec,
        protocol,
        title=spec.title,
        version=spec.version,
        source=protocol.source,
        dialogues=plans,
        methods=sorted(methods(protocol).items()),
        protocol_header=next(
            (
                label.split(":", 1)[1]
                for a in automata.values()
                for row in a.moves
                for label in row
                if label.endswith(f".{PROTOCOL_HEADER}")
            ),
            None,
        ),
    )
    return {"dialogue.py": text}
