"""Which top-level blocks of a protocol package's codec modules every version lays out alike.

A block is one structure's dataclass, one message (its class, runs and codec functions) or one
named type's functions. Its layout is its code rendered without the spec's words (summary,
paragraphs, field docs, `Spec:` lines): what the plan says of its identity, fields, types and
bytes. A block is shared when every version of the package lays it out alike and every name it
uses that some block defines is itself shared: what it calls must be the same code too, in
every version. A spec edit to words alone therefore never moves a class between modules.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Block:
    """One top-level block of a version's codec module."""

    kind: str  # "struct", "message" or "named"
    key: str  # the class or function stem naming it in its module
    text: str  # rendered, without its Spec: lines
    defines: frozenset[str]  # top-level names it binds
    uses: frozenset[str]  # names it reads that it does not bind
    layout: str = ""  # rendered without the spec's words: what versions are compared by

    @property
    def ident(self) -> tuple[str, str]:
        return (self.kind, self.key)


def block(kind: str, key: str, text: str, layout: str = "") -> Block:
    """A rendered block with the names it binds and reads, from its syntax tree; `layout` is
    the block rendered without the spec's words (default: `text`)."""
    tree = ast.parse(text)
    defines: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            defines.add(node.name)
        elif isinstance(node, ast.Assign):
            defines.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defines.add(node.target.id)
    return Block(
        kind, key, text, frozenset(defines), frozenset(_free(tree) - defines), layout or text
    )


_Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _free(tree: ast.AST) -> set[str]:
    """The names `tree` reads that no function of it binds (its parameters, what it assigns,
    a comprehension's targets): a field called `join` (AMQP 0-9's dtx.start) is a parameter,
    not the records module's `join`."""
    free: set[str] = set()

    def bound_in(nodes: Sequence[ast.AST]) -> set[str]:
        """What `nodes` bind: assigned names, and those an `except ... as`, an `import`, a
        `match` pattern or a nested `def` binds without a Name node."""
        out: set[str] = set()
        for node in nodes:
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    out.add(n.id)
                elif isinstance(n, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and n.name:
                    out.add(n.name)
                elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    out.add(n.name)
                elif isinstance(n, ast.alias):
                    out.add(n.asname or n.name.split(".")[0])
        return out

    def visit(node: ast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, _Scope):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
            outer = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
            if not isinstance(node, ast.Lambda):
                outer += [
                    *node.decorator_list,
                    *(p.annotation for p in params if p and p.annotation),
                ]
                outer += [node.returns] if node.returns is not None else []
            for n in outer:
                visit(n, bound)  # evaluated where the function is defined
            body: list[ast.AST] = list(node.body) if isinstance(node.body, list) else [node.body]
            inner = bound | {p.arg for p in params if p is not None} | bound_in(body)
            for statement in body:
                visit(statement, frozenset(inner))
            return
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            bound = bound | bound_in([g.target for g in node.generators])
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            free.add(node.id)
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    visit(tree, frozenset())
    return free


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
        if all(ident in other and other[ident].layout == b.layout for other in by_version[1:])
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
