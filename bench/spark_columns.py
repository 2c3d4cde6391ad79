"""Speed of a generated `spark_schema.message_columns` against another tree's, in one run.

    PYTHONPATH=. .venv/bin/python bench/spark_columns.py BEFORE [--budget SECONDS]

BEFORE is the root of another checkout (or a `git archive` of one, e.g. the commit before a
change to the frames-table modules). For each sample below, the messages of its captures are
decoded once with this checkout's codec (the codecs must lay out alike in both trees), then
`message_columns` of this checkout's and of BEFORE's `spark_schema` module (loaded beside it,
with its own `shared_spark` where it has one) build the same batches in alternating rounds
(bench/timing.py); both must give equal columns first. Prints batches per second of each and
the ratio now / before (above 1: faster now). Nothing is written to bench/results.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

from timing import ROOT, rates

# (sample folder, version package)
SAMPLES = (
    ("rabbitmq-stream", "rabbitmq_stream.v4_0"),
    ("amqp-0-9-1", "amqp_0_9_1.rabbitmq"),
    ("amqp-fast-0-8", "amqp_fast_0_8.v0_8"),
    ("amqp-1-0", "amqp_1_0.v1_0"),
)
BATCH = 4000


def messages(sample: str, version: str) -> list[Any]:
    """The messages of a sample's captures, both directions, repeated up to BATCH."""
    package = importlib.import_module(f"specgen_codecs.{version}")
    out: list[Any] = []
    for path in sorted((ROOT / "samples" / sample / "session-1").glob("*.bin")):
        sender = "client" if ".c2s." in path.name else "server"
        reader = package.FrameReader(sender, verify_checksums=False, preamble=True)
        reader.feed(path.read_bytes())
        out += list(reader)
    return (out * (BATCH // len(out) + 1))[:BATCH]


def load(before: Path, version: str) -> ModuleType:
    """BEFORE's spark_schema module of `version`, beside this checkout's package."""
    package = version.rsplit(".", 1)[0]
    folder = before / "generated" / package.replace(".", "/")
    source = (folder / version.rsplit(".", 1)[1] / "spark_schema.py").read_text()
    if "from ..shared_spark import" in source:
        shared = _module(
            f"specgen_codecs.{package}._before_shared_spark", folder / "shared_spark.py"
        )
        sys.modules[shared.__name__] = shared
        source = source.replace("from ..shared_spark import", "from .._before_shared_spark import")
    module = ModuleType(f"specgen_codecs.{version}._before_spark_schema")
    module.__package__ = f"specgen_codecs.{version}"
    sys.modules[module.__name__] = module
    exec(compile(source, str(folder / "spark_schema.py"), "exec"), module.__dict__)
    return module


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = name.rsplit(".", 1)[0]
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("--budget", type=float, default=6.0, help="seconds per sample")
    args = parser.parse_args()
    for sample, version in SAMPLES:
        msgs = messages(sample, version)
        now = importlib.import_module(f"specgen_codecs.{version}.spark_schema")
        old = load(args.before, version)
        a, b = now.message_columns(msgs), old.message_columns(msgs)
        assert a.keys() == b.keys() and all(a[k].equals(b[k]) for k in a), version
        got = rates(
            {
                "now": partial(now.message_columns, msgs),
                "before": partial(old.message_columns, msgs),
            },
            args.budget,
        )
        print(
            f"{version:24} {len(msgs)} messages: now {got['now']:7.1f}/s, "
            f"before {got['before']:7.1f}/s, now/before {got['now'] / got['before']:.2f}"
        )


if __name__ == "__main__":
    main()
