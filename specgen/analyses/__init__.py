"""Protocol-specific analyses for `specgen report`, one small module per protocol.

The report's own sections are generic: they read the columns every frames table has. An analysis
module adds what only one protocol's messages can say (publish-to-confirm latency for RabbitMQ
Streams), the names of its response codes, and how its frames count them. Each names its
protocol (`PROTOCOL`) and the struct columns it reads (`COLUMNS`), runs only on a frames table
that has them, and reads the generated package of the spec version the table was decoded with,
found through the registry; so the report never names a protocol, a version or a command. What
the protocols with dialogue grammars share, checking a conversation against them, is
`conversations.py`; what every protocol has, the rules of its spec a capture breaks,
`spec_rules.py`.
"""

from __future__ import annotations

from specgen.analyses import (
    amqp_0_9_1,
    amqp_0_10,
    amqp_1_0,
    amqp_fast_0_8,
    rabbitmq_stream,
    spec_rules,
)
from specgen.pipeline.sections import Analysis
from specgen.registry import SpecVersion, find

MODULES = (amqp_0_9_1, amqp_0_10, amqp_1_0, amqp_fast_0_8, rabbitmq_stream)


def for_columns(columns: set[str], spec: SpecVersion | None = None) -> list[Analysis]:
    """The analyses whose columns the frames table has, each reading the generated package of
    `spec`, the version the table was decoded with; for a table that does not say which (one
    written by an older `specgen decode`, or by another writer), its protocol's latest version."""
    out: list[Analysis] = []
    for module in MODULES:
        if spec is not None and spec.protocol != module.PROTOCOL:
            continue
        if module.applies(columns):
            out.append(module.Analyses(spec if spec is not None else find(module.PROTOCOL)))
    if spec is not None and spec_rules.applies(columns):  # the table names what decoded it
        out.append(spec_rules.Analyses(spec))
    return out
