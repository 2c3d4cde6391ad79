"""What every planner shares and nothing else: the planning error and the naming of fields.

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
