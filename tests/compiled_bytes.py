"""What one build of the codecs writes, as a digest per item: run once on the pure-Python build
and once on the compiled one (tests/test_compiled.py), the two outputs must be equal.

    python tests/compiled_bytes.py pure|compiled > digests.json

Items: every message of the shipped samples (samples/<protocol>/session-*/ *.c2s.bin and
*.s2c.bin, read by the version's FrameReader, and encoded back), and every boundary
sample of each version's generated conformance tests (their `SAMPLES` of (id, message, sender),
encoded). An item that
raises records the exception's type and message instead, so both builds must fail alike too.
Prints {"build": ..., "compiled": [compiled modules], "items": {id: digest}} as JSON.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import pkgutil
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# samples/<folder> -> the codec version that reads it
SAMPLES = {
    "rabbitmq-stream": "rabbitmq_stream.v4_0",
    "amqp-0-9-1": "amqp_0_9_1.rabbitmq",
    "amqp-1-0": "amqp_1_0.v1_0",
    "amqp-0-10": "amqp_0_10.v0_10",
    "amqp-fast-0-8": "amqp_fast_0_8.v0_8",
}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def _outcome(fn: Any, *args: Any) -> str:
    try:
        out = fn(*args)
    except Exception as e:  # both builds must raise alike
        return f"raises {type(e).__name__}: {e}"
    return _digest(out) if isinstance(out, bytes | bytearray) else f"gives {type(out).__name__}"


def sample_items(items: dict[str, str]) -> None:
    for folder, version in SAMPLES.items():
        codec = importlib.import_module(f"specgen_codecs.{version}")
        for path in sorted((ROOT / "samples" / folder).glob("session-*/*.bin")):
            sender = "client" if path.name.endswith(".c2s.bin") else "server"
            data = path.read_bytes()
            reader = codec.FrameReader(sender=sender, preamble=data.startswith(b"AMQP"))
            reader.feed(data)
            name = f"{folder}/{path.parent.name}/{path.name}"
            messages = iter(reader)
            for n in itertools.count():
                try:
                    msg = next(messages)
                except StopIteration:
                    break
                except Exception as e:  # the reader stops here: both builds must stop alike
                    items[f"{name}#{n}"] = f"raises {type(e).__name__}: {e}"
                    break
                items[f"{name}#{n}"] = f"{type(msg).__name__} {_outcome(codec.encode, msg)}"


def vector_items(items: dict[str, str]) -> None:
    import specgen_codecs

    for info in pkgutil.walk_packages(specgen_codecs.__path__, "specgen_codecs."):
        if not info.name.endswith(".test_conformance"):
            continue
        tests = importlib.import_module(info.name)
        codec = importlib.import_module(info.name.rsplit(".", 1)[0])
        for entry in getattr(tests, "SAMPLES", []):
            if len(entry) != 3 or not isinstance(entry[2], str):  # not (id, message, sender)
                continue
            items[f"{info.name}::{entry[0]}"] = _outcome(codec.encode, entry[1])


def main(build: str) -> int:
    if build == "pure":
        sys.path.insert(0, str(ROOT))
        import specgen.locations  # noqa: F401  (specgen_codecs: this checkout's generated/)
    items: dict[str, str] = {}
    sample_items(items)
    vector_items(items)
    compiled = sorted(
        name
        for name, module in sys.modules.items()
        if name.startswith("specgen_codecs.")
        and (getattr(module, "__file__", None) or "").endswith(".so")
    )
    json.dump({"build": build, "compiled": compiled, "items": items}, sys.stdout, indent=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
