"""A generated module's imports, worked out from the names its code reads.

A back-end that spreads one version's code over several modules renders each module's body
first, then asks here what the body reads that it does not bind and where each name comes
from. A name nobody provides is an error of the generator, raised before anything is written.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from specgen.emitters.naming import PlanError
from specgen.emitters.plan import isort_key
from specgen.emitters.sharing import block

# what the generated modules take from the standard library, by name
STANDARD: Mapping[str, str] = {
    "Any": "typing",
    "ClassVar": "typing",
    "Literal": "typing",
    "TypeAlias": "typing",
    "Callable": "collections.abc",
    "dataclass": "dataclasses",
    "Decimal": "decimal",
}
# imported whole, read as `struct.Struct`
MODULES = frozenset({"dataclasses", "decimal", "operator", "struct", "uuid", "zlib"})


@dataclass
class Imports:
    """Where one module's names come from: whole modules, names by the module giving them, and
    names taken under another (`Assembler as _Assembler`), each a statement of its own."""

    modules: set[str] = field(default_factory=set)
    names: dict[str, set[str]] = field(default_factory=dict)
    renamed: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # module -> (name, as)

    def text(self) -> str:
        """The import lines, in ruff's isort order: the standard library, then the package's
        modules, farthest first (`..values` before `.enums`)."""
        standard = [f"import {m}" for m in sorted(self.modules)]
        standard += self._statements(sorted(m for m in self.names if not m.startswith(".")))
        own = sorted(
            {m for m in [*self.names, *self.renamed] if m.startswith(".")},
            key=lambda m: (-(len(m) - len(m.lstrip("."))), m.lstrip(".")),
        )
        local = self._statements(own)
        return "\n\n".join("\n".join(group) for group in (standard, local) if group)

    def _statements(self, modules: list[str]) -> list[str]:
        """Each module's statements, modules in the order given: its names in one, and each
        name it gives under another in one of its own, ordered by the names they import."""
        out: list[str] = []
        for m in modules:
            each = [(n, f"from {m} import {n} as {alias}") for n, alias in self.renamed.get(m, ())]
            names = sorted(self.names.get(m, ()), key=isort_key)
            if names:
                each.append((names[0], f"from {m} import {', '.join(names)}"))
            out += [line for _, line in sorted(each, key=lambda e: isort_key(e[0]))]
        return out


def needed(
    body: str, providers: Mapping[str, str], where: str, also: Iterable[str] = ()
) -> Imports:
    """What `body` must import: each name it reads but does not bind (and the names `also`, which
    it re-exports), from `providers` (name -> the module giving it, relative like `..values`;
    `module:Name` for a name taken under another) or the standard library."""
    found = Imports()
    for name in sorted(block("module", where, body).uses | set(also)):
        if name in MODULES:
            found.modules.add(name)
        elif name in providers and ":" in providers[name]:
            module, original = providers[name].split(":")
            found.renamed.setdefault(module, set()).add((original, name))
        elif name in providers:
            found.names.setdefault(providers[name], set()).add(name)
        elif name in STANDARD:
            found.names.setdefault(STANDARD[name], set()).add(name)
        elif not hasattr(builtins, name):
            raise PlanError(f"{where}: the generated code reads {name!r}, which nothing provides")
    return found


def provided(module: str, names: Iterable[str]) -> dict[str, str]:
    """`names`, each given by `module`."""
    return {name: module for name in names}
