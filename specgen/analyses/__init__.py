"""Protocol-specific analyses for `specgen report`, one small module per protocol.

The report's own sections are generic: they read the columns every frames table has. An analysis
module adds what only one protocol's messages can say (publish-to-confirm latency for RabbitMQ
Streams), the names of its response codes, and how its frames count them. Each declares the
struct columns it reads (`COLUMNS`) and runs only on a frames table that has them, so the report
never names a protocol or a command.
"""

from __future__ import annotations

import importlib
from typing import Any

MODULES = ("specgen.analyses.amqp_0_9_1", "specgen.analyses.rabbitmq_stream")


def for_columns(columns: set[str]) -> list[Any]:
    """The analysis modules whose columns the frames table has."""
    out = []
    for name in MODULES:
        module = importlib.import_module(name)
        if module.applies(columns):
            out.append(module)
    return out
