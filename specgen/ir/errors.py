"""The one exception an IR node raises when it breaks an invariant."""

from __future__ import annotations


class IRError(ValueError):
    """An IR node broke an invariant; the message names the node, the rule and the spec line."""
