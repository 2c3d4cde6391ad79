"""What every planner shares and nothing else: the planning error, the naming of fields and the
order generated imports list names in.

Its own module so that the planners for each kind of layout (`plan`, `plan_packed`, `plan_described`) import it
without importing one another.
"""

from __future__ import annotations

import keyword
import re


class PlanError(ValueError):
    pass


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s)
    return s.lower()


def attr_name(name: str) -> str:
    """A field's attribute: snake case, a Python keyword with `_` after it (`global_`)."""
    s = snake(name)
    return s + "_" if keyword.iskeyword(s) else s


def isort_key(name: str) -> tuple[int, list[int | str]]:
    """The order ruff (as isort) gives imported names: CONSTANTS, Classes, functions, case
    aside, numbers by value (`INT8` before `INT16`, `_r_str8` before `_r_str16`)."""
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name.lower())]
