"""Which top-level blocks of a protocol package's codec modules every version renders alike.

A block is one structure's dataclass, one message (its class, runs and codec functions) or one
named type's functions, rendered with its `Spec:` lines left out. A block is shared when every
version of the package renders it to the same text and every name it uses that some block
defines is itself shared: what it calls must be the same code too, in every version.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One top-level block of a version's codec module."""

    kind: str  # "struct", "message" or "named"
    key: str  # the class or function stem naming it in its module
    text: str  # rendered, without its Spec: lines
    defines: frozenset[str]  # top-level names it binds
    uses: frozenset[str]  # names it reads that it does not bind

    @property
    def ident(self) -> tuple[str, str]:
        return (self.kind, self.key)


def block(kind: str, key: str, text: str) -> Block:
    """A rendered block with the names it binds and reads, from its syntax tree."""
    tree = ast.parse(text)
    defines: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            defines.add(node.name)
        elif isinstance(node, ast.Assign):
            defines.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defines.add(node.target.id)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return Block(kind, key, text, frozenset(defines), frozenset(used - defines))


def shared(versions: list[list[Block]]) -> set[tuple[str, str]]:
    """The blocks (kind, key) to generate once for all `versions` (each a version's blocks):
    none for a package of one version."""
    if len(versions) < 2:
        return set()
    by_version = [{b.ident: b for b in blocks} for blocks in versions]
    first = by_version[0]
    found = {
        ident
        for ident, b in first.items()
        if all(ident in other and other[ident].text == b.text for other in by_version[1:])
    }
    # drop a block that uses a name some version binds in a block not shared, until none does
    changed = True
    while changed:
        changed = False
        for blocks in by_version:
            owner = {name: ident for ident, b in blocks.items() for name in b.defines}
            for ident in sorted(found):
                if any(owner.get(name, ident) not in found for name in blocks[ident].uses):
                    found.discard(ident)
                    changed = True
    return found


def used_names(blocks: list[Block]) -> set[str]:
    """Every name `blocks` read: what their module must import."""
    return {name for b in blocks for name in b.uses}
