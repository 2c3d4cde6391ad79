"""What a protocol ships for what its documents do not say, as front-ends receive it: files by
name (protocol.toml's `[data]`, e.g. AMQP's field-table tags). Its own module so that the
front-ends need not import the package that imports them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

NO_DATA: Mapping[str, Path] = MappingProxyType({})
