"""Where the historical spec corpus is, for the tests that walk it.

The corpus is data from `../shared/specs-corpus/` (never committed here): $SPECGEN_CORPUS (the
specs-corpus folder, or the rabbitmq-stream folder itself), else ../shared next to the
checkout, else /work/shared. Tests that need it skip with this reason when it is missing.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

MISSING = (
    "the RabbitMQ Streams corpus (specs-corpus/rabbitmq-stream with index.tsv) is not "
    "available: set SPECGEN_CORPUS or put it in ../shared/specs-corpus"
)


def streams_corpus() -> Path | None:
    candidates = [
        Path(os.environ["SPECGEN_CORPUS"]) if os.environ.get("SPECGEN_CORPUS") else None,
        Path(__file__).resolve().parents[1].parent / "shared" / "specs-corpus",
        Path("/work/shared/specs-corpus"),
    ]
    for base in candidates:
        if base is None:
            continue
        for folder in (base / "rabbitmq-stream", base):
            if (folder / "index.tsv").is_file() and (folder / "branches" / "index.tsv").is_file():
                return folder
    return None


def index(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def corpus_file(rel: str) -> Path | None:
    """A file of the spec corpus (`amqp-0-8/amqp0-8.xml`), found as the Streams corpus is."""
    candidates = [
        Path(os.environ["SPECGEN_CORPUS"]) if os.environ.get("SPECGEN_CORPUS") else None,
        Path(__file__).resolve().parents[1].parent / "shared" / "specs-corpus",
        Path("/work/shared/specs-corpus"),
    ]
    for base in candidates:
        if base is not None and (base / rel).is_file():
            return base / rel
    return None
