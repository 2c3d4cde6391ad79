"""Which specs there are: `specs/*/protocol.toml` read into `SpecVersion`s.

Kept apart from the front-ends so emitters and the pipeline can name a spec without loading a
grammar.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from specgen.locations import DATA, SPECS

ROOT = DATA  # spec paths in spans and generated headers are relative to it: `specs/...`


@dataclass(frozen=True)
class SpecVersion:
    protocol: str  # "rabbitmq-stream"
    package: str  # "rabbitmq_stream"
    version: str  # "4.0"
    module: str  # "v4_0"
    document: Path
    format: str
    overlay: Path | None
    latest: bool
    title: str = ""  # "RabbitMQ Streams"
    ports: tuple[int, ...] = ()  # the servers' default TCP ports (protocol.toml)
    label: str = ""  # how spans name the document when it is not a file of ours ("REV:PATH")
    # what the documents do not say, by name (protocol.toml's [data]: AMQP's field-table tags)
    data: tuple[tuple[str, Path], ...] = ()
    overlay_label: str = ""  # the same for the overlay: never a scratch folder's path
    # finding codes whose reading the user accepts (`--accept`): see emitters/verify.py
    accept: tuple[str, ...] = ()

    @property
    def qualified(self) -> str:
        """The name the CLI takes: `rabbitmq-stream/4.0`."""
        return f"{self.protocol}/{self.version}"

    @property
    def package_path(self) -> str:
        return f"{self.package}/{self.module}"

    @property
    def import_name(self) -> str:
        return f"specgen_codecs.{self.package}.{self.module}"

    @property
    def framing_name(self) -> str:
        """The generated framing module of the protocol, which all its versions share."""
        return f"specgen_codecs.{self.package}.framing"


def registry(specs: Path = SPECS) -> list[SpecVersion]:
    out = []
    for meta in sorted(specs.glob("*/protocol.toml")):
        data = tomllib.loads(meta.read_text(encoding="utf-8"))
        overlay = meta.parent / data["overlay"] if data.get("overlay") else None
        shipped = tuple((name, meta.parent / file) for name, file in data.get("data", {}).items())
        for v in data["versions"]:
            out.append(
                SpecVersion(
                    protocol=data["name"],
                    package=data["package"],
                    version=v["name"],
                    module=v["module"],
                    document=meta.parent / v["document"],
                    format=v["format"],
                    overlay=overlay,
                    latest=bool(v.get("latest", False)),
                    title=data.get("title", data["name"]),
                    ports=tuple(data.get("ports", ())),
                    data=shipped,
                )
            )
    return out


def find(name: str, specs: Path = SPECS) -> SpecVersion:
    """`rabbitmq-stream/4.0`, `rabbitmq-stream` (its latest version), `rabbitmq_stream.v4_0`,
    or the path of a spec document."""
    versions = registry(specs)
    for v in versions:
        if name in (v.qualified, f"{v.package}.{v.module}", f"{v.package}/{v.module}"):
            return v
        if (v.protocol == name or v.package == name) and v.latest:
            return v
    path = Path(name)
    if path.exists():
        for v in versions:
            if v.document.resolve() == path.resolve():
                return v
    known = ", ".join(v.qualified for v in versions)
    raise LookupError(f"unknown spec {name!r}; known: {known}")


def relative(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()
