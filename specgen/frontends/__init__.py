"""Front-ends by spec format: each turns one spec document into an IR and a log of findings.

A front-end is `build(path, rel, protocol, version, data) -> (Protocol, FindingLog)`: `path` is
the document, `rel` its project-relative name for spans, `data` the files the protocol ships for
what its documents do not say (protocol.toml's `[data]`, by name: AMQP's field-table tags), which
a front-end that needs none ignores. It raises SpecSyntaxError or SpecError, each naming
file:line:column. Modules are imported when their format is asked for, so a caller
that needs one front-end does not load the others' grammars.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from typing import Protocol as Interface

from specgen.frontends.data import NO_DATA as NO_DATA
from specgen.ir import FindingLog, Protocol


class Build(Interface):
    def __call__(
        self,
        path: Path,
        rel: str,
        protocol: str,
        version: str,
        data: Mapping[str, Path] = ...,
        **declared: Any,
    ) -> tuple[Protocol, FindingLog]: ...


FRONTENDS: dict[str, str] = {
    "adoc": "specgen.frontends.adoc",  # RabbitMQ Streams' PROTOCOL.adoc
    "amqp-xml": "specgen.frontends.amqp_xml",  # the AMQP 0-9-1 (and 0-8) XML spec
    "amqp10-xml": "specgen.frontends.amqp10_xml",  # AMQP 1.0's XML, alone or inside prose
    "amqp010-xml": "specgen.frontends.amqp010_xml",  # AMQP 0-10's XML (amqp.0-10.xml)
    "rfc006-abnf": "specgen.frontends.rfc006",  # AMQ RFC 006 (AMQP/Fast 0.8): ABNF and prose
}
"""Format name (as protocol.toml spells it) -> module with a `build` function."""


# front-ends that read an overlay's declarations (`declared=`: types for names a document uses
# but never declares, AMQP 0-9's `content`)
DECLARING = frozenset({"amqp-xml"})


def takes_declarations(format: str) -> bool:
    return format in DECLARING


def frontend(format: str) -> Build:
    if format not in FRONTENDS:
        raise LookupError(f"no front-end for format {format!r}; known: {', '.join(FRONTENDS)}")
    build: Build = importlib.import_module(FRONTENDS[format]).build
    return build
