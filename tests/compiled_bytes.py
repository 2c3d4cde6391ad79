"""What one build of the codecs writes, as a digest per item: run once on the pure-Python build
and once on the compiled one (tests/test_compiled.py), the two outputs must be equal.

    python tests/compiled_bytes.py pure|compiled > digests.json

Items: every frame of the shipped samples (samples/<protocol>/session-*/ *.c2s.bin and
*.s2c.bin, cut by the version's FrameReader, decoded and encoded back), and every boundary
sample of each version's generated conformance tests (their `SAMPLES`, encoded). An item that
raises records the exception's type and message instead, so both builds must fail alike too.
Prints {"build": ..., "compiled": [compiled modules], "items": {id: digest}} as JSON.
"""

from __future__ import annotations

import hashlib
import importlib
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


def _decode(codec: Any, raw: bytes, sender: str) -> Any:
    try:
        return codec.decode(raw, sender)
    except TypeError:  # a decode without a sender
        return codec.decode(raw)


def sample_items(items: dict[str, str]) -> None:
    for folder, version in SAMPLES.items():
        codec = importlib.import_module(f"specgen_codecs.{version}")
        for path in sorted((ROOT / "samples" / folder).glob("session-*/*.bin")):
            client = path.name.endswith(".c2s.bin")
            sender = "client" if client else "server"
            reader = codec.FrameReader(sender=sender, preamble=client)
            reader.feed(path.read_bytes())
            for offset, raw in reader.frames():
                key = f"{folder}/{path.parent.name}/{path.name}@{offset}"
                try:
                    msg = _decode(codec, raw, sender)
                except Exception as e:
                    items[key] = f"raises {type(e).__name__}: {e}"
                    continue
                items[key] = f"{type(msg).__name__} {_outcome(codec.encode, msg)}"


def vector_items(items: dict[str, str]) -> None:
    import specgen_codecs

    for info in pkgutil.walk_packages(specgen_codecs.__path__, "specgen_codecs."):
        if not info.name.endswith(".test_conformance"):
            continue
        tests = importlib.import_module(info.name)
        codec = importlib.import_module(info.name.rsplit(".", 1)[0])
        for entry in getattr(tests, "SAMPLES", []):
            name = entry[0]
            msg = next(v for v in entry[1:] if not isinstance(v, str))
            items[f"{info.name}::{name}"] = _outcome(codec.encode, msg)


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
